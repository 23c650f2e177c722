#!/usr/bin/env python3
# usage: jfrhas.py file.jfr REGEX... : share of samples whose stack matches each regex
import json, subprocess, sys, re
f = sys.argv[1]
d = json.loads(subprocess.run(['/usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr','print','--json','--stack-depth','300','--events','jdk.ExecutionSample',f],capture_output=True,text=True).stdout)
ev = d['recording']['events']; n = len(ev)
stacks = []
for e in ev:
    st = e['values'].get('stackTrace'); frames = st['frames'] if st else []
    stacks.append(' '.join(fr['method']['type']['name'] + '.' + fr['method']['name'] for fr in frames))
for p in sys.argv[2:]:
    r = re.compile(p); k = sum(1 for s in stacks if r.search(s))
    print(f"{100.0*k/n:5.1f}% {k:5d}  {p}")
