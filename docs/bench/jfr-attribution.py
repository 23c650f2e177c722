#!/usr/bin/env python3
# Share of each JVM's CPU that security takes, from JFR execution samples (README "What security costs per operation").
#   jfr print --events jdk.ExecutionSample --stack-depth 100 claim-service.jfr > claim-service.txt
#   python3 docs/bench/jfr-attribution.py claim-service.txt ...
# A sample counts for the first category whose pattern matches any frame of its stack; the rest is "other".
import sys, re, collections
cats = [
 ('record-signatures', re.compile(r'RecordSignature|IdentityKey\.sign|org\.bouncycastle|RecordAuthenticity')),
 ('secret-sealing', re.compile(r'SecretSealer|SealingKeys|X25519|XDH')),
 ('tls', re.compile(r'SslTransportLayer|sun\.security\.ssl|javax\.net\.ssl|SslHandler')),
 ('sasl-scram', re.compile(r'\.scram\.|SaslClientAuthenticator|SaslServerAuthenticator|DelegationToken')),
 ('acl-authorizer', re.compile(r'StandardAuthorizer|AclAuthorizer|authorizer\.|AuthHelper')),
 ('rest-jwt', re.compile(r'smallrye\.jwt|io\.quarkus\.security|jose4j')),
]
for f in sys.argv[1:]:
    counts = collections.Counter(); stack=[]; inst=False
    for line in open(f):
        s=line.strip()
        if s.startswith('stackTrace = ['): inst=True; stack=[]; continue
        if inst and s==']':
            inst=False
            c='other'
            for name, rx in cats:
                if any(rx.search(x) for x in stack): c=name; break
            counts[c]+=1; continue
        if inst and s and s!='...': stack.append(s)
    tot=sum(counts.values())
    sec=sum(v for k,v in counts.items() if k!='other')
    print(f'{f:40s} n={tot:4d} security={sec/tot*100:5.1f}%  ' + ' '.join(f'{k}={v/tot*100:.1f}%' for k,v in counts.most_common() if k!='other'))
