import re,sys,statistics
for v in sys.argv[1:]:
    ev=[]
    for line in open(f"trace-{v}.log"):
        if not line.startswith("TRACE"): continue
        p=line.split()
        ev.append(p)
    sub={}; first={}; launches=[]
    for p in ev:
        if p[1]=="submit": sub[int(p[2])]=float(p[4])
        elif p[1]=="first": first[int(p[2])]=(float(p[4]),float(p[6]))
        elif p[1]=="launch": launches.append((float(p[4]),float(p[6]),int(p[8])))
    rep=[i for i in first if i>=16]
    tt=[first[i][1] for i in rep]
    nl=[sum(1 for (t,s,T) in launches if sub[i] <= t <= first[i][0]) for i in rep]
    print(v, "replacements", len(rep), "ttft median %.2f mean %.2f"%(statistics.median(tt),statistics.mean(tt)), "launches between submit and first: mean %.2f"%statistics.mean(nl))
    # step durations: T>64 steps
    big=[s for (t,s,T) in launches if T>64]; 
    print("   submit_ms of T>64 steps: median %.2f mean %.2f n %d; T<=64: median %.3f"%(statistics.median(big),statistics.mean(big),len(big),statistics.median([s for (t,s,T) in launches if T<=64])))
    from collections import Counter
    print("   launches-between histogram", sorted(Counter(nl).items()))
