"""Workload configuration models (the ``workload:`` section of a scenario).

Every number is bounded (contracts/limits.py: NaN/inf refused, a limit per
unit, token counts at most ``MAX_TOKENS``), and each arrival process states
its ``peak_rps`` so the scenario can refuse a run that would generate more
requests than ``MAX_REQUESTS`` before generating any.

Arrival processes and token-length distributions are separate plug-in
families, each a pydantic model keyed on ``kind`` and combined by config (as
vidur does), each with its own seed derived from the scenario seed. The
generators that turn these into request lists live beside this file.
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from scalearena.contracts.limits import MAX_BATCH, MAX_TOKENS, StrictSpec


class _Spec(StrictSpec):
    """Extra keys forbidden, frozen, NaN/inf and numbers past their unit's limit refused."""


# ---- arrival processes -------------------------------------------------------------------------


class ConstantArrivals(_Spec):
    kind: Literal["constant"] = Field(description="Evenly spaced arrivals at a fixed rate.")
    rate_rps: float = Field(gt=0, description="Requests per second.")

    @property
    def peak_rps(self) -> float:
        return self.rate_rps


class PoissonArrivals(_Spec):
    kind: Literal["poisson"] = Field(description="Poisson process: exponential inter-arrival times.")
    rate_rps: float = Field(gt=0, description="Mean requests per second.")

    @property
    def peak_rps(self) -> float:
        return self.rate_rps


class RateStep(_Spec):
    duration_s: float = Field(gt=0, description="How long this step lasts, seconds.")
    rate_rps: float = Field(ge=0, description="Mean requests per second during this step.")


class SteppedArrivals(_Spec):
    kind: Literal["stepped"] = Field(description="Piecewise-constant rate (covers the paper's staircase).")
    steps: list[RateStep] = Field(min_length=1, max_length=100_000, description="Consecutive steps; the last one repeats to the end.")
    poisson: bool = Field(default=True, description="Poisson arrivals within a step (false: evenly spaced).")

    @property
    def peak_rps(self) -> float:
        return max(step.rate_rps for step in self.steps)


class RampArrivals(_Spec):
    kind: Literal["ramp"] = Field(description="Rate rising (or falling) linearly from start to end.")
    start_rps: float = Field(ge=0, description="Rate at t=0, requests per second.")
    end_rps: float = Field(ge=0, description="Rate at the end of the ramp, requests per second.")
    ramp_s: float | None = Field(default=None, gt=0, description="Ramp length, seconds; null = whole run.")
    poisson: bool = Field(default=True, description="Non-homogeneous Poisson (false: deterministic spacing).")

    @property
    def peak_rps(self) -> float:
        return max(self.start_rps, self.end_rps)


class GammaArrivals(_Spec):
    kind: Literal["gamma"] = Field(description="Gamma inter-arrivals with a chosen burstiness.")
    rate_rps: float = Field(gt=0, description="Mean requests per second.")
    cv: float = Field(gt=0, le=100, description="Coefficient of variation of inter-arrival times (1 = Poisson).")

    @property
    def peak_rps(self) -> float:
        return self.rate_rps


class OnOffArrivals(_Spec):
    kind: Literal["onoff"] = Field(description="Two-state Markov-modulated Poisson process (on/off bursts).")
    on_rate_rps: float = Field(ge=0, description="Rate while bursting.")
    off_rate_rps: float = Field(ge=0, description="Rate between bursts.")
    mean_on_s: float = Field(gt=0, description="Mean burst length, seconds (exponential).")
    mean_off_s: float = Field(gt=0, description="Mean gap between bursts, seconds (exponential).")

    @property
    def peak_rps(self) -> float:
        return max(self.on_rate_rps, self.off_rate_rps)


class DiurnalArrivals(_Spec):
    kind: Literal["diurnal"] = Field(description="Sinusoidal rate: mean + amplitude * sin(2 pi t / period).")
    mean_rps: float = Field(gt=0, description="Mean rate, requests per second.")
    amplitude_rps: float = Field(ge=0, description="Amplitude; must not exceed the mean.")
    period_s: float = Field(gt=0, description="Period of one cycle, seconds (86400 for a day).")
    phase_s: float = Field(default=0.0, description="Shift of the sine, seconds.")

    @property
    def peak_rps(self) -> float:
        return self.mean_rps + self.amplitude_rps

    @model_validator(mode="after")
    def _amp(self) -> DiurnalArrivals:
        if self.amplitude_rps > self.mean_rps:
            raise ValueError("amplitude_rps must not exceed mean_rps (the rate would go negative)")
        return self


class FlashCrowdArrivals(_Spec):
    kind: Literal["flash_crowd"] = Field(description="Base Poisson rate with a sudden k-times spike.")
    base_rps: float = Field(gt=0, description="Rate outside the spike.")
    factor: float = Field(gt=1, description="Spike multiplier k.")
    start_s: float = Field(ge=0, description="Spike start, seconds.")
    duration_s: float = Field(gt=0, description="Spike length, seconds.")

    @property
    def peak_rps(self) -> float:
        return self.base_rps * self.factor


class TraceArrivals(_Spec):
    kind: Literal["trace"] = Field(description="Replay a request trace (arrival times and token counts).")
    path: str = Field(description="Trace file, relative to the scenario file or absolute.")
    format: Literal["azure", "mooncake", "burstgpt"] = Field(description="Trace format.")
    start_s: float = Field(default=0.0, ge=0, description="Window start in the trace's own time, seconds.")
    window_s: float | None = Field(default=None, gt=0, description="Window length; null = to the end.")
    time_scale: float = Field(default=1.0, ge=1e-6, le=1e6, description="Speed-up: trace time is divided by this.")
    target_rps: float | None = Field(
        default=None, gt=0, description="Rescale to this mean rate by seeded thinning or duplication."
    )
    max_model_len: int | None = Field(
        default=None, gt=0, le=MAX_TOKENS, description="Clip input+output tokens to this length (counted in the results)."
    )
    trace_model: str | None = Field(
        default=None, description="BurstGPT only: replay just this Model column value (e.g. ChatGPT, GPT-4)."
    )

    @property
    def peak_rps(self) -> float | None:
        """The replay's rate when rescaled; a trace replayed as is is bounded by its file instead."""
        return self.target_rps

    @model_validator(mode="after")
    def _trace_model(self) -> TraceArrivals:
        if self.trace_model is not None and self.format != "burstgpt":
            raise ValueError("trace_model applies only to format 'burstgpt' (the only trace with a Model column)")
        return self


Arrivals = Annotated[
    ConstantArrivals
    | PoissonArrivals
    | SteppedArrivals
    | RampArrivals
    | GammaArrivals
    | OnOffArrivals
    | DiurnalArrivals
    | FlashCrowdArrivals
    | TraceArrivals,
    Field(discriminator="kind"),
]

# ---- token-length distributions ---------------------------------------------------------------


class FixedTokens(_Spec):
    kind: Literal["fixed"] = Field(description="Every request has the same length.")
    value: int = Field(ge=1, le=MAX_TOKENS, description="Tokens.")


class UniformTokens(_Spec):
    kind: Literal["uniform"] = Field(description="Uniform integer between min and max inclusive.")
    min: int = Field(ge=1, le=MAX_TOKENS, description="Smallest length, tokens.")
    max: int = Field(ge=1, le=MAX_TOKENS, description="Largest length, tokens.")


class BoundedNormalTokens(_Spec):
    kind: Literal["bounded_normal"] = Field(description="Normal(mean, sd) clipped to [min, max] (the paper's).")
    min: int = Field(ge=1, le=MAX_TOKENS, description="Lower bound, tokens.")
    max: int = Field(ge=1, le=MAX_TOKENS, description="Upper bound, tokens.")
    mean: float = Field(gt=0, le=MAX_TOKENS, description="Mean before clipping, tokens.")
    sd: float = Field(ge=0, le=MAX_TOKENS, description="Standard deviation before clipping, tokens.")


class LognormalTokens(_Spec):
    kind: Literal["lognormal"] = Field(description="Lognormal with the given median and sigma, clipped.")
    median: float = Field(gt=0, le=MAX_TOKENS, description="Median length, tokens.")
    sigma: float = Field(gt=0, le=10, description="Sigma of the underlying normal.")
    min: int = Field(default=1, ge=1, le=MAX_TOKENS, description="Lower bound, tokens.")
    max: int = Field(default=32768, ge=1, le=MAX_TOKENS, description="Upper bound, tokens.")


class EmpiricalTokens(_Spec):
    kind: Literal["empirical"] = Field(description="Sample lengths from a column of a data file.")
    path: str = Field(description="CSV file, relative to the scenario file or absolute.")
    column: str = Field(description="Column holding token counts (e.g. ContextTokens).")


TokenLengths = Annotated[
    FixedTokens | UniformTokens | BoundedNormalTokens | LognormalTokens | EmpiricalTokens,
    Field(discriminator="kind"),
]


class SharedPrefix(_Spec):
    groups: int = Field(ge=1, le=MAX_BATCH, description="Number of distinct shared prefixes (e.g. system prompts).")
    prefix_tokens: int = Field(ge=1, le=MAX_TOKENS, description="Length of each shared prefix, tokens.")
    fraction: float = Field(default=1.0, ge=0, le=1, description="Share of requests that carry a prefix.")


class WorkloadSpec(_Spec):
    model: str | None = Field(
        default=None, description="Model the traffic targets; null = the first variant's model."
    )
    arrivals: Arrivals = Field(description="Arrival process.")
    input_tokens: TokenLengths | None = Field(
        default=None, description="Prompt length distribution (not needed for a trace)."
    )
    output_tokens: TokenLengths | None = Field(
        default=None, description="Output length distribution (not needed for a trace)."
    )
    shared_prefix: SharedPrefix | None = Field(
        default=None, description="Shared-prefix groups for prefix-cache affinity."
    )
    tenant: str = Field(default="", max_length=128, description="Flow control's fairness id of these requests "
                        "(sent as x-gateway-inference-fairness-id); \"\" = the default flow.")
    priority: int = Field(default=0, ge=-1000, le=1000, description="Flow control's priority band of these "
                          "requests; higher is served first.")

    @model_validator(mode="after")
    def _lengths(self) -> WorkloadSpec:
        if self.arrivals.kind != "trace" and (self.input_tokens is None or self.output_tokens is None):
            raise ValueError("input_tokens and output_tokens are required unless arrivals.kind is 'trace'")
        for tl in (self.input_tokens, self.output_tokens):
            if tl is not None and hasattr(tl, "min") and hasattr(tl, "max") and tl.min > tl.max:
                raise ValueError(f"token lengths: min {tl.min} exceeds max {tl.max}")
        return self
