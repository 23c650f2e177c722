import json, subprocess, sys, collections, re
f=sys.argv[1]; pat=re.compile(sys.argv[2]); depth=int(sys.argv[3]) if len(sys.argv)>3 else 1
d=json.loads(subprocess.run(['/usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr','print','--json','--stack-depth','200','--events','jdk.ExecutionSample',f],capture_output=True,text=True).stdout)
tot=0; sub=0; leaf=collections.Counter(); callers=collections.Counter()
for e in d['recording']['events']:
    st=e['values'].get('stackTrace'); fr=st['frames'] if st else []
    names=[x['method']['type']['name'].replace('/','.')+'.'+x['method']['name'] for x in fr]
    tot+=1
    idx=[i for i,n in enumerate(names) if pat.search(n)]
    if not idx: continue
    sub+=1
    leaf[names[0]]+=1
    # frames just below the outermost match
    i=idx[-1]
    callers[' <- '.join(names[max(0,i-depth):i+1][::-1])]+=1
print(f'{sub}/{tot} = {sub*100/tot:.1f}%')
print('leaves:'); [print(f'  {v*100/tot:5.1f}% {k}') for k,v in leaf.most_common(20)]
print('below outermost match:'); [print(f'  {v*100/tot:5.1f}% {k}') for k,v in callers.most_common(15)]
