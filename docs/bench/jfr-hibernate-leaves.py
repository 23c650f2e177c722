import json, subprocess, sys, collections, re
f = sys.argv[1]
jfr = '/usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr'
d = json.loads(subprocess.run([jfr,'print','--json','--stack-depth','300','--events','jdk.ExecutionSample',f],capture_output=True,text=True).stdout)
total=0; hib=0; leafhib=collections.Counter(); hibm=collections.Counter(); entry=collections.Counter()
for e in d['recording']['events']:
    st = e['values'].get('stackTrace'); frames = st['frames'] if st else []
    if not frames: continue
    total += 1
    names = [fr['method']['type']['name'] + '.' + fr['method']['name'] for fr in frames]
    hi = [i for i,n in enumerate(names) if n.startswith('org/hibernate')]
    if not hi: continue
    hib += 1
    # innermost hibernate frame (closest to leaf) and its hibernate method
    i = hi[0]
    leafpk = '/'.join(names[0].split('/')[:3])
    leafhib[leafpk] += 1
    # the app frame nearest above the innermost hibernate frame (caller of hibernate API)
    caller = next((names[j] for j in range(i+1, len(names)) if 'csiorchestrator' in names[j]), 'none')
    # hibernate API method called: outermost contiguous hibernate frame above i
    k = i
    while k+1 < len(names) and names[k+1].startswith('org/hibernate'): k += 1
    hibm[names[k].split('/')[-1]] += 1
    entry[caller.split('/')[-1]] += 1
print('total', total, 'with hibernate', hib)
print('== leaf package of hibernate samples'); [print(f'{v*100/total:5.1f}% {k}') for k,v in leafhib.most_common(15)]
print('== hibernate entry method (outermost of innermost run)'); [print(f'{v*100/total:5.1f}% {k}') for k,v in hibm.most_common(25)]
print('== app caller'); [print(f'{v*100/total:5.1f}% {k}') for k,v in entry.most_common(25)]
