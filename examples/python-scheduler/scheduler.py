#!/usr/bin/python3
"""An example scheduler of csi-orchestrator in Python: Debian's python3-confluent-kafka (librdkafka) and
python3-cryptography, written from events-schema/CONTRACT.md only. Not a supported client: an integration example.

usage:
  scheduler.py --kit DIR claim   --namespace NS --volume VOL --node NODE [--mode write|read] [--allocation A]
                                 [--mount-flag FLAG ...]          claims and waits until ready (prints the host path)
  scheduler.py --kit DIR release --namespace NS --volume VOL --allocation A      releases and waits until released
  scheduler.py record --signing-key F [--sealing-key F] --namespace NS --volume VOL [--node NODE] --allocation A
                      [--mode write|read|release] [--mount-flag FLAG ...] [--ce-time-shift SECONDS]
      prints one signed claim request as JSON ({"key","headers":[[name,value]],"value"}) without sending it
  scheduler.py --kit DIR demo    --namespace NS --volume VOL --node NODE
      claim for write, ready, release, released; then a record with a bad signature, one replayed and one outside
      the replay window, each with the outcome CONTRACT.md section 8 documents. Prints one JSON line per step and a
      last line {"demo":"ok",...} with the ce_ids of the refused records; exits 1 at the first step that is not so.

DIR is the kit `./csi scheduler init <id> --out DIR` writes: librdkafka.properties (bootstrap.servers, SSL with
ca.pem, kafka-client.pem, kafka-client.key), signing.key, claim-service-sealing.jwk, scheduler.env.
"""

import argparse
import datetime
import json
import os
import sys
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition

import csi_contract as c

# How long an answer may take: a claim mounts a volume on a node (tens of seconds at worst on a loaded machine).
ANSWER_TIMEOUT_S = 180
# ce_time this far from now is outside claim-service's +-5 min window (CONTRACT.md section 8), with room for skew.
OUTSIDE_WINDOW_S = 10 * 60


def read_properties(path):
    props = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or line.startswith("!"):
                continue
            key, sep, value = line.partition("=")
            if not sep:
                raise ValueError("%s: a line without key=value" % path)
            props[key.strip()] = value.strip()
    return props


class Kit:
    def __init__(self, directory):
        self.dir = os.path.abspath(directory)
        env = read_properties(os.path.join(self.dir, "scheduler.env"))
        env = {k[len("export "):] if k.startswith("export ") else k: v.strip("'\"") for k, v in env.items()}
        self.scheduler_id = env["CSI_SCHEDULER_ID"]
        # the services' csi.topics.prefix (env CSI_TOPICS_PREFIX); empty by default
        self.prefix = env.get("CSI_TOPICS_PREFIX", env.get("CSI_TOPIC_PREFIX", ""))
        self.kafka = read_properties(os.path.join(self.dir, "librdkafka.properties"))
        for key in ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location"):
            if key in self.kafka and not os.path.isabs(self.kafka[key]):
                self.kafka[key] = os.path.join(self.dir, self.kafka[key])
        self.signer = c.SigningKey.read(os.path.join(self.dir, "signing.key"))
        self.sealing = c.sealing_recipient(os.path.join(self.dir, "claim-service-sealing.jwk"))

    def topic(self, name):
        return self.prefix + name


def now_rfc3339(shift_s=0):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=shift_s)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Scheduler:
    def __init__(self, kit, connect=True):
        self.kit = kit
        self.answers = {}
        if not connect:
            return
        producer_conf = dict(kit.kafka)
        # the Java client's partitioner (murmur2), so every producer puts a volume's records on one partition
        producer_conf.setdefault("partitioner", "murmur2_random")
        producer_conf.setdefault("acks", "all")
        self.producer = Producer(producer_conf)
        consumer_conf = dict(kit.kafka)
        consumer_conf.update({"group.id": "scheduler-%s-python-example" % kit.scheduler_id,
                              "enable.auto.commit": False, "auto.offset.reset": "latest"})
        self.consumer = Consumer(consumer_conf)
        status = kit.topic("claim-status")
        partitions = self.consumer.list_topics(status, timeout=30).topics[status].partitions
        assignment = []
        for p in partitions:
            low, high = self.consumer.get_watermark_offsets(TopicPartition(status, p), timeout=30)
            assignment.append(TopicPartition(status, p, high))  # answers from now on
        self.consumer.assign(assignment)

    def close(self):
        self.producer.flush(30)
        self.consumer.close()

    # ---------------------------------------------------------------- writing

    def record(self, body, ce_time=None, key=None):
        """(key, headers, value) of a claim request: CloudEvents headers, then the signature over the raw bytes."""
        value = json.dumps(body, separators=(",", ":")).encode("utf-8")
        key = body["volumeId"] if key is None else key
        headers = [("ce_id", str(uuid.uuid4()).encode()), ("ce_type", c.CLAIM_REQUESTED_TYPE.encode()),
                   ("ce_source", ("/scheduler/" + self.kit.scheduler_id).encode()), ("ce_specversion", b"1.0"),
                   ("ce_time", (ce_time or now_rfc3339()).encode()), ("content-type", b"application/json")]
        headers += self.kit.signer.signature_headers(key, headers, value)
        return key, headers, value

    def send(self, rec):
        key, headers, value = rec
        failures = []
        self.producer.produce(self.kit.topic("claim-requested"), key=key.encode("utf-8"), value=value, headers=headers,
                              on_delivery=lambda err, msg: failures.append(err) if err else None)
        if self.producer.flush(30) != 0 or failures:
            raise RuntimeError("claim-requested not delivered: %s" % failures)
        return dict(headers)["ce_id"].decode()

    def request(self, namespace, volume, allocation, mode, node=None, flags=()):
        body = {"requestId": "py-" + str(uuid.uuid4()), "namespace": namespace, "volumeId": volume,
                "allocationId": allocation, "mode": mode, "requestedAt": now_rfc3339()}
        if mode != "release":
            body.update({"nodeId": node, "accessMode": "single-node-writer" if mode == "write" else "multi-node-reader-only",
                         "attachmentMode": "file-system"})
        if flags:
            kid, recipient, public = self.kit.sealing
            body["sealedMountFlags"] = c.seal_mount_flags(public, kid, namespace, volume, flags, recipient)
        return body

    # ---------------------------------------------------------------- reading

    def poll_answers(self, timeout_s):
        msg = self.consumer.poll(timeout_s)
        if msg is None:
            return
        if msg.error():
            raise RuntimeError("claim-status: %s" % msg.error())
        status = json.loads(msg.value())
        self.answers.setdefault(status.get("requestId"), []).append(status)

    def await_answer(self, request_id, states, timeout_s=ANSWER_TIMEOUT_S):
        """The first answer to request_id in one of states; fails on a final answer in another state or the timeout."""
        deadline = time.monotonic() + timeout_s
        seen = 0
        while time.monotonic() < deadline:
            answers = self.answers.get(request_id, [])
            for a in answers[seen:]:
                if a["state"] in states:
                    return a
                if a["state"] in ("rejected", "failed", "released"):
                    raise RuntimeError("request %s answered %s: %s" % (request_id, a["state"], a.get("reason")))
            seen = len(answers)
            self.poll_answers(min(1.0, max(0.0, deadline - time.monotonic())))
        raise RuntimeError("no %s answer to %s within %d s (answers: %s)" % (states, request_id, timeout_s,
                                                                             self.answers.get(request_id)))

    def claim(self, namespace, volume, node, allocation, mode="write", flags=()):
        body = self.request(namespace, volume, allocation, mode, node, flags)
        self.send(self.record(body))
        return self.await_answer(body["requestId"], ("ready",))

    def release(self, namespace, volume, allocation):
        body = self.request(namespace, volume, allocation, "release")
        self.send(self.record(body))
        return self.await_answer(body["requestId"], ("released",))

    def after_in_order(self, namespace, volume):
        """A harmless request on the volume's partition, answered: claim-service handled every record sent before it."""
        body = self.request(namespace, volume, "py-sentinel-" + uuid.uuid4().hex[:8], "release")
        self.send(self.record(body))
        self.await_answer(body["requestId"], ("released",))


def is_mount_point(path):
    """Whether path is a mount point in this mount namespace: /proc/self/mountinfo's fifth field (a bind mount from
    the same file system keeps its device, so os.path.ismount cannot tell)."""
    if not path:
        return False
    target = os.path.realpath(path)
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            # octal escapes (\040 for a space) as the kernel writes them
            point = line.split()[4].encode().decode("unicode_escape")
            if point == target:
                return True
    return False


def step(name, **fields):
    print(json.dumps(dict({"step": name}, **fields)), flush=True)


def demo(s, ns, vol, node):
    alloc = "py-alloc-" + uuid.uuid4().hex[:8]
    ready = s.claim(ns, vol, node, alloc)
    # on the node's machine (the demo runs there) the host path is a mount point while the claim is ready
    step("ready", requestId=ready["requestId"], hostPath=ready.get("hostPath"), nodeId=ready.get("nodeId"),
         mounted=is_mount_point(ready.get("hostPath")))
    released = s.release(ns, vol, alloc)
    step("released", requestId=released["requestId"])

    # a bad signature: one bit of csi-sig flipped. Dead-lettered only ("bad signature"), never answered.
    body = s.request(ns, vol, "py-forged-" + uuid.uuid4().hex[:8], "release")
    key, headers, value = s.record(body)
    sig = bytearray(dict(headers)["csi-sig"])
    sig[0] = ord("A") if sig[0] != ord("A") else ord("B")
    headers = [(n, bytes(sig) if n == "csi-sig" else v) for n, v in headers]
    forged_ce_id = s.send((key, headers, value))
    s.after_in_order(ns, vol)
    if s.answers.get(body["requestId"]):
        raise RuntimeError("a record with a bad signature was answered: %s" % s.answers[body["requestId"]])
    step("bad-signature", ceId=forged_ce_id, answered=False)

    # a replay: the same record twice. The first is answered, the copy is dead-lettered "replayed", not answered.
    body = s.request(ns, vol, "py-replay-" + uuid.uuid4().hex[:8], "release")
    rec = s.record(body)
    replay_ce_id = s.send(rec)
    s.await_answer(body["requestId"], ("released",))
    s.send(rec)
    s.after_in_order(ns, vol)
    if len(s.answers.get(body["requestId"], [])) != 1:
        raise RuntimeError("a replay was answered again: %s" % s.answers.get(body["requestId"]))
    step("replayed", ceId=replay_ce_id, answers=1)

    # outside the window: ce_time 10 minutes ago. Answered rejected, the reason saying so.
    body = s.request(ns, vol, "py-stale-" + uuid.uuid4().hex[:8], "release")
    stale_ce_id = s.send(s.record(body, ce_time=now_rfc3339(-OUTSIDE_WINDOW_S)))
    answer = s.await_answer(body["requestId"], ("rejected",))
    if "outside window" not in answer.get("reason", ""):
        raise RuntimeError("the stale record's answer does not say 'outside window': %s" % answer)
    step("outside-window", ceId=stale_ce_id, state=answer["state"], reason=answer["reason"])
    print(json.dumps({"demo": "ok", "badSignatureCeId": forged_ce_id, "replayedCeId": replay_ce_id,
                      "outsideWindowCeId": stale_ce_id}), flush=True)


class KeysOnly:
    """What `record` needs of a kit: the signing key and claim-service's sealing key, no Kafka."""

    def __init__(self, signing_key, sealing_key):
        self.signer = c.SigningKey.read(signing_key)
        self.sealing = c.sealing_recipient(sealing_key) if sealing_key else None
        self.scheduler_id = self.signer.sub.split(":", 1)[1]


def print_record(args):
    s = Scheduler(KeysOnly(args.signing_key, args.sealing_key), connect=False)
    body = s.request(args.namespace, args.volume, args.allocation, args.mode, args.node, args.mount_flag)
    key, headers, value = s.record(body, ce_time=now_rfc3339(args.ce_time_shift))
    print(json.dumps({"key": key, "headers": [[n, v.decode("utf-8")] for n, v in headers],
                      "value": value.decode("utf-8")}))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kit")
    parser.add_argument("command", choices=("claim", "release", "demo", "record"))
    parser.add_argument("--signing-key")
    parser.add_argument("--sealing-key")
    parser.add_argument("--ce-time-shift", type=int, default=0)
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--volume", required=True)
    parser.add_argument("--node")
    parser.add_argument("--allocation")
    parser.add_argument("--mode", default="write", choices=("write", "read", "release"))
    parser.add_argument("--mount-flag", action="append", default=[])
    args = parser.parse_args()
    if args.command == "record":
        return print_record(args)
    if not args.kit:
        parser.error(args.command + " needs --kit")
    s = Scheduler(Kit(args.kit))
    try:
        if args.command == "claim":
            if not args.node:
                parser.error("claim needs --node")
            alloc = args.allocation or "py-alloc-" + uuid.uuid4().hex[:8]
            ready = s.claim(args.namespace, args.volume, args.node, alloc, args.mode, args.mount_flag)
            step("ready", allocationId=alloc, requestId=ready["requestId"], hostPath=ready.get("hostPath"))
        elif args.command == "release":
            if not args.allocation:
                parser.error("release needs --allocation")
            step("released", requestId=s.release(args.namespace, args.volume, args.allocation)["requestId"])
        else:
            if not args.node:
                parser.error("demo needs --node")
            demo(s, args.namespace, args.volume, args.node)
    except RuntimeError as e:
        print(json.dumps({"error": str(e)}), flush=True)
        return 1
    finally:
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
