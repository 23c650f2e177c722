#!/usr/bin/env python3
# usage: jfrcat.py file.jfr : samples by category (first rule matching any frame, rules in order)
import json, subprocess, sys, collections, re
f = sys.argv[1]
jfr = '/usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr'
d = json.loads(subprocess.run([jfr,'print','--json','--stack-depth','300','--events','jdk.ExecutionSample',f],capture_output=True,text=True).stdout)
rules = [(c, re.compile(p)) for c, p in [
 ('record save (json+fsync)', r'MountRecordStore\.save|EventSpool\.(write|append|spool)|AtomicFiles'),
 ('mount table', r'MountTable\.(read|parse)'),
 ('signature/seal', r'Ed25519|X25519|RecordSignature|RecordAuthenticity|Seal|AESGCM|GCM'),
 ('json', r'jackson'),
 ('hibernate', r'org/hibernate'),
 ('pg client', r'io/vertx/(pgclient|sqlclient)'),
 ('grpc', r'io/grpc'),
 ('kafka producer', r'kafka/clients/producer'),
 ('kafka consumer', r'kafka/clients/consumer'),
 ('kafka other', r'org/apache/kafka'),
 ('logging', r'org/jboss/log|java/util/logging'),
 ('otel', r'opentelemetry'),
 ('micrometer', r'micrometer'),
 ('netty', r'io/netty'),
 ('vertx', r'io/vertx'),
 ('app', r'csiorchestrator'),
]]
c = collections.Counter(); total = 0
for e in d['recording']['events']:
    st = e['values'].get('stackTrace'); frames = st['frames'] if st else []
    names = [fr['method']['type']['name'] + '.' + fr['method']['name'] for fr in frames]
    total += 1
    # deepest-first: the frame closest to the leaf wins by rule order? use rule order over the whole stack
    cat = 'other'
    for cname, rx in rules:
        if any(rx.search(n) for n in names):
            cat = cname; break
    c[cat] += 1
print('samples', total)
for k, v in c.most_common(): print(f'{v*100/total:5.1f}% {k}')
