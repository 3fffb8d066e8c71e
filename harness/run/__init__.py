"""Running plans: the runner, the executors, interrupts, the Backend protocol and the registry of backends."""
