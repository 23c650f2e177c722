import sys, re, collections, subprocess
f=sys.argv[1]
out=subprocess.run(['jfr','print','--events','jdk.ExecutionSample','--stack-depth','30',f],capture_output=True,text=True).stdout
threads=collections.Counter(); tops=collections.Counter(); app=collections.Counter(); n=0
for ev in out.split('jdk.ExecutionSample')[1:]:
    n+=1
    m=re.search(r'sampledThread = "([^"]*)"',ev); t=m.group(1) if m else '?'
    t=re.sub(r'\d+','N',t); threads[t]+=1
    frames=re.findall(r'^\s+([\w.$<>/]+\.[\w$<>]+)\(',ev,re.M)
    if frames: tops[frames[0]]+=1
    for fr in frames:
        if re.search(r'csiorchestrator|smallrye|quarkus|vertx|kafka|hibernate|netty|micrometer',fr):
            app[fr]+=1; break
print(f, 'samples', n)
print('threads:', threads.most_common(12))
print('first app-ish frame:'); [print('  ',c,k) for k,c in app.most_common(15)]
