import sys,re,collections
txt=open(sys.argv[1]).read()
samples=txt.split("jdk.ExecutionSample {")[1:]
cats=[("hibernate-plan-cache","SelectInterpretationsKey|QueryInterpretationCache"),("kafka-clients","org.apache.kafka"),("hibernate","org.hibernate"),("pg-client","io.vertx.pgclient|io.vertx.sqlclient"),("jackson","com.fasterxml.jackson"),("otel","io.opentelemetry"),("logging","org.jboss.logmanager|org.jboss.logging"),("bouncycastle","org.bouncycastle"),("tls/crypto","sun.security|com.sun.crypto|javax.crypto"),("smallrye-messaging","io.smallrye.reactive.messaging"),("netty","io.netty"),("micrometer","io.micrometer"),("csi","io.csiorchestrator")]
c=collections.Counter(); n=0
for s in samples:
    n+=1
    frames=re.findall(r"^\s+([\w.$<>]+)\(",s,re.M)
    hit=None
    # innermost frame first: classify by the first category whose pattern matches any frame, priority by order of frames (inner to outer)
    for f in frames:
        for name,pat in cats:
            if re.search(pat,f): hit=name;break
        if hit: break
    c[hit or "other("+(frames[0] if frames else "?")+")"]+=1
for k,v in c.most_common(25): print(f"{v:5d} {100*v/n:5.1f}% {k}")
print(n,"samples")
