"""Certificates and keys for the CLUSTER=kwok control plane (harness/kube/kwok.py).

What kubeadm writes under /etc/kubernetes/pki, reduced to what a one-host control plane needs
(kubeadm's "PKI certificates and requirements" page; kwokctl's binary runtime does the same with
one admin pair): a cluster CA; the API server's serving certificate for 127.0.0.1 / localhost and
the in-cluster names; a client certificate in ``system:masters`` for the admin kubeconfig the
controllers and scalearena use; the service-account signing key pair; and a front-proxy CA with
its client certificate, which the aggregation layer presents to extension API servers
(prometheus-adapter, KEDA's metrics server) so they can trust the user it forwards. A serving
certificate for those extension servers comes from the same CA (``serving_pair``), so their
APIServices carry a real ``caBundle`` rather than ``insecureSkipTLSVerify``.

Written with ``cryptography`` (X.509 from a maintained library, not by hand); everything lives in
one folder that ``kwok down`` removes.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 30  # a local control plane lives for hours; kubeadm's default is a year


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


def _write(path: Path, data: bytes, mode: int = 0o600) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _load(pair: Pair) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    key = serialization.load_pem_private_key(pair.key.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return cert, key


def ca(folder: Path, name: str, cn: str) -> Pair:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=VALID_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    pair = Pair(folder / f"{name}.crt", folder / f"{name}.key")
    _write(pair.key, _key_pem(key))
    _write(pair.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return pair


def issue(folder: Path, name: str, issuer: Pair, cn: str, *, org: str | None = None, server: bool = False,
          client: bool = False, hosts: tuple[str, ...] = ()) -> Pair:
    """A leaf certificate signed by ``issuer``: serving (SANs ``hosts``, IPs or DNS names), client, or both."""
    ca_cert, ca_key = _load(issuer)
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    usages = (([ExtendedKeyUsageOID.SERVER_AUTH] if server else [])
              + ([ExtendedKeyUsageOID.CLIENT_AUTH] if client else []))
    b = (x509.CertificateBuilder().subject_name(_name(cn, org)).issuer_name(ca_cert.subject)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=VALID_DAYS))
         .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
         .add_extension(x509.ExtendedKeyUsage(usages), critical=False))
    if hosts:
        sans: list[x509.GeneralName] = []
        for h in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(h)))
            except ValueError:
                sans.append(x509.DNSName(h))
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = b.sign(ca_key, hashes.SHA256())
    pair = Pair(folder / f"{name}.crt", folder / f"{name}.key")
    _write(pair.key, _key_pem(key))
    _write(pair.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return pair


def service_account_keys(folder: Path) -> Pair:
    """The key pair that signs service-account tokens (``cert`` holds the public key, as sa.pub)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pair = Pair(folder / "sa.pub", folder / "sa.key")
    _write(pair.key, _key_pem(key))
    _write(pair.cert, key.public_key().public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo), 0o644)
    return pair


@dataclass(frozen=True)
class ControlPlanePKI:
    ca: Pair
    apiserver: Pair
    admin: Pair
    sa: Pair
    front_proxy_ca: Pair
    front_proxy_client: Pair


APISERVER_HOSTS = ("127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                   "kubernetes.default.svc.cluster.local")


def control_plane(folder: Path) -> ControlPlanePKI:
    folder.mkdir(parents=True, exist_ok=True)
    root = ca(folder, "ca", "scalearena-kwok-ca")
    fp = ca(folder, "front-proxy-ca", "scalearena-kwok-front-proxy-ca")
    return ControlPlanePKI(
        ca=root,
        apiserver=issue(folder, "apiserver", root, "kube-apiserver", server=True, hosts=APISERVER_HOSTS),
        admin=issue(folder, "admin", root, "scalearena-admin", org="system:masters", client=True),
        sa=service_account_keys(folder),
        front_proxy_ca=fp,
        front_proxy_client=issue(folder, "front-proxy-client", fp, "front-proxy-client", client=True))


def serving_pair(folder: Path, ca_pair: Pair, name: str, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> Pair:
    """A serving certificate for an extension API server on loopback, signed by the cluster CA."""
    return issue(folder, name, ca_pair, name, server=True, hosts=hosts)
