#!/usr/bin/python3
"""Checks csi_contract.py against the contract's test vectors (events-schema/CONTRACT.md).

usage: check_vectors.py [VECTORS_JSON]   (default: the repository's events-schema vectors)
Exits 0 and prints "vectors: N records, sealing: OK" when every byte matches; else names each mismatch, exits 1.
"""

import base64
import json
import os
import sys

import csi_contract as c

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "events-schema", "src", "test", "resources", "vectors", "contract-vectors.json")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    with open(path, encoding="utf-8") as f:
        vectors = json.load(f)
    problems = []

    key = c.SigningKey(vectors["keys"]["schedulerSigningKey"])
    trust = {k["kid"]: k for k in vectors["keys"]["trustFile"]["keys"]}
    for i, r in enumerate(vectors["records"], 1):
        headers = [(h["name"], None if h["value"] is None else h["value"].encode("utf-8")) for h in r["headers"]]
        value = None if r["value"] is None else r["value"].encode("utf-8")
        signed = c.signed_bytes(r["key"], headers, value)
        if signed.hex() != r["signedBytesHex"]:
            problems.append("record %d: signed bytes differ:\n  ours   %s\n  vector %s" % (i, signed.hex(), r["signedBytesHex"]))
        sig = dict(key.signature_headers(r["key"], headers, value))
        if sig["csi-sig-kid"].decode() != r["csi-sig-kid"] or sig["csi-sig"].decode() != r["csi-sig"]:
            problems.append("record %d: signature differs: %s vs %s" % (i, sig["csi-sig"].decode(), r["csi-sig"]))
        if not c.verify(trust[r["csi-sig-kid"]]["x"], r["key"], headers, value, r["csi-sig"]):
            problems.append("record %d: the vector's signature does not verify" % i)
        if value is not None and c.verify(trust[r["csi-sig-kid"]]["x"], r["key"], headers, value + b" ", r["csi-sig"]):
            problems.append("record %d: a changed value still verifies" % i)

    s = vectors["sealedMountFlags"]
    kid, sub, recipient_public = c.sealing_recipient(vectors["keys"]["trustFile"])
    if recipient_public.hex() != s["recipientPublicKeyHex"] or kid != s["keyId"] or sub != s["recipient"]:
        problems.append("sealing: claim-service's key from the trust file differs")
    eph = c.b64url_decode(s["ephemeralPrivateKey"])
    epk, shared, salt, aes_key, aad = c.seal_intermediates(recipient_public, eph, s["recipient"], s["keyId"],
                                                           s["namespace"], s["volumeId"])
    for name, ours in (("ephemeralPublicKeyHex", epk), ("sharedSecretHex", shared), ("hkdfSaltHex", salt),
                       ("aesKeyHex", aes_key), ("aadHex", aad)):
        if ours.hex() != s[name]:
            problems.append("sealing: %s differs: %s vs %s" % (name, ours.hex(), s[name]))
    if c.SEAL_INFO.decode() != s["hkdfInfo"]:
        problems.append("sealing: HKDF info differs")
    envelope = c.seal_plaintext(recipient_public, s["keyId"], s["namespace"], s["volumeId"], s["plaintext"].encode("utf-8"),
                                s["recipient"], eph, bytes.fromhex(s["nonceHex"]))
    if envelope != s["sealed"]:
        problems.append("sealing: envelope differs:\n  ours   %s\n  vector %s" % (envelope, s["sealed"]))
    flags = json.loads(s["plaintext"])["mountFlags"]
    if c.seal_mount_flags(recipient_public, s["keyId"], s["namespace"], s["volumeId"], flags, s["recipient"], eph,
                          bytes.fromhex(s["nonceHex"])) != s["sealed"]:
        problems.append("sealing: seal_mount_flags does not give the vector's plaintext")
    if base64.b64decode(envelope["epk"]) != epk:
        problems.append("sealing: epk is not standard base64 of the ephemeral key")

    if problems:
        print("\n".join(problems))
        return 1
    print("vectors: %d records, sealing: OK" % len(vectors["records"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
