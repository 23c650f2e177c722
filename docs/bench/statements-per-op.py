import sys,re,collections
# usage: stmts.py logfile... ; counts PostgreSQL log_statement=all lines, per operation = handled_requests inserts
c=collections.Counter()
for f in sys.argv[1:]:
    for line in open(f,errors='replace'):
        m=re.search(r'LOG:\s+(execute [^:]*|statement): (.*)',line)
        if not m: continue
        kind='execute' if m.group(1).startswith('execute') else 'statement'
        c[kind+': '+m.group(2)[:100]]+=1
ops=sum(n for k,n in c.items() if 'INSERT INTO handled_requests' in k)
tot=sum(c.values())
print('operations (handled_requests inserts) %d, statements %d, per operation %.1f'%(ops,tot,tot/max(ops,1)))
for k,n in c.most_common(25):
    print('%6d %5.2f/op  %s'%(n,n/max(ops,1),k))
