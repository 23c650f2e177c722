"""The scheduler's record contract of csi-orchestrator, written from events-schema/CONTRACT.md only.

Pure functions over bytes (python3-cryptography, no Kafka): the signed bytes of a record (section 5), its
Ed25519 signature, the key files (section 6) and the sealing of mount flags (section 7).
"""

import base64
import json
import os
import struct

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

VERSION_TAG = b"csi-record-signature-v1"
SIGNED_HEADERS = ("ce_id", "ce_type", "ce_source", "ce_specversion", "ce_time", "content-type")
SEAL_ALGORITHM = "X25519-HKDF-SHA256-A256GCM"
SEAL_INFO = b"csi-orchestrator seal v1"
CLAIM_REQUESTED_TYPE = "io.csiorchestrator.claim.requested.v1"


def b64url_decode(text):
    """base64url without padding (JWK x and d)."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url_encode(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _field(data):
    """A 4-byte signed big-endian length (-1 for None) and the bytes."""
    if data is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(data)) + data


def _utf8(value):
    if value is None or isinstance(value, bytes):
        return value
    return value.encode("utf-8")


def signed_bytes(key, headers, value):
    """The bytes csi-sig covers. key: str/bytes/None; headers: [(name, bytes/str/None)] in record order; value: bytes/None."""
    out = bytearray(_field(VERSION_TAG))
    out += _field(_utf8(key))
    for name in SIGNED_HEADERS:
        values = [_utf8(v) for (n, v) in headers if n == name]
        out += struct.pack(">i", len(values))
        for v in values:
            out += _field(v)
    out += _field(value)
    return bytes(out)


class SigningKey:
    """A scheduler's Ed25519 key file (JWK: kty OKP, crv Ed25519, kid, sub, x, d in base64url)."""

    def __init__(self, jwk):
        if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
            raise ValueError("signing key: not an Ed25519 JWK (kty OKP, crv Ed25519)")
        self.kid = jwk["kid"]
        self.sub = jwk["sub"]
        self._key = Ed25519PrivateKey.from_private_bytes(b64url_decode(jwk["d"]))
        public = self._key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        if public != b64url_decode(jwk["x"]):
            raise ValueError("signing key: x is not the public key of d")

    @classmethod
    def read(cls, path):
        with open(path, encoding="utf-8") as f:
            return cls(json.load(f))

    def signature_headers(self, key, headers, value):
        """The two headers to add: csi-sig-kid and csi-sig (standard base64 of the 64-byte signature)."""
        signature = self._key.sign(signed_bytes(key, headers, value))
        return [("csi-sig-kid", self.kid.encode("utf-8")), ("csi-sig", base64.b64encode(signature))]


def verify(public_x_b64url, key, headers, value, signature_b64):
    """True when signature_b64 (standard base64) is the key's signature of the record."""
    public = Ed25519PublicKey.from_public_bytes(b64url_decode(public_x_b64url))
    try:
        public.verify(base64.b64decode(signature_b64, validate=True), signed_bytes(key, headers, value))
        return True
    except Exception:  # InvalidSignature, bad base64
        return False


def sealing_recipient(path_or_jwk):
    """claim-service's X25519 public key: one JWK, or a JWK Set (its last enc key for claim-service)."""
    jwk = path_or_jwk
    if isinstance(path_or_jwk, str):
        with open(path_or_jwk, encoding="utf-8") as f:
            jwk = json.load(f)
    if "keys" in jwk:
        found = [k for k in jwk["keys"] if k.get("use") == "enc" and k.get("sub") == "claim-service"]
        if not found:
            raise ValueError("no enc key of claim-service in the key set")
        jwk = found[-1]
    if jwk.get("kty") != "OKP" or jwk.get("crv") != "X25519":
        raise ValueError("sealing key: not an X25519 JWK (kty OKP, crv X25519)")
    return jwk["kid"], jwk.get("sub", "claim-service"), b64url_decode(jwk["x"])


def seal_intermediates(recipient_public, ephemeral_private, recipient, key_id, namespace, volume_id):
    """(shared secret, HKDF salt, AES key, AAD) of a sealing; ephemeral_private: 32 raw bytes."""
    eph = X25519PrivateKey.from_private_bytes(ephemeral_private)
    epk = eph.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    shared = eph.exchange(X25519PublicKey.from_public_bytes(recipient_public))
    salt = epk + recipient_public
    aes_key = HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=SEAL_INFO).derive(shared)
    aad = b"\0".join([b"csi-seal-v1", recipient.encode(), key_id.encode(), (namespace + "/" + volume_id).encode()])
    return epk, shared, salt, aes_key, aad


def seal_mount_flags(recipient_public, key_id, namespace, volume_id, flags, recipient="claim-service",
                     ephemeral_private=None, nonce=None):
    """The sealedMountFlags envelope (a dict). Fresh ephemeral key and nonce unless given (test vectors only)."""
    plaintext = json.dumps({"secrets": {}, "mountFlags": list(flags)}, separators=(",", ":")).encode("utf-8")
    return seal_plaintext(recipient_public, key_id, namespace, volume_id, plaintext, recipient, ephemeral_private, nonce)


def seal_plaintext(recipient_public, key_id, namespace, volume_id, plaintext, recipient="claim-service",
                   ephemeral_private=None, nonce=None):
    if ephemeral_private is None:
        ephemeral_private = X25519PrivateKey.generate().private_bytes(
            serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    if nonce is None:
        nonce = os.urandom(12)
    epk, _, _, aes_key, aad = seal_intermediates(recipient_public, ephemeral_private, recipient, key_id, namespace,
                                                 volume_id)
    ciphertext = AESGCM(aes_key).encrypt(nonce, plaintext, aad)  # ciphertext followed by the 16-byte tag
    b64 = lambda raw: base64.b64encode(raw).decode("ascii")  # noqa: E731 - standard base64 in the envelope
    return {"keyId": key_id, "algorithm": SEAL_ALGORITHM, "recipient": recipient, "epk": b64(epk),
            "nonce": b64(nonce), "ciphertext": b64(ciphertext)}
