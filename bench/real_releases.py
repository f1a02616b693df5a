# Release documents for every version a graph-data tree lists (the shared fixture's,
# OpenShift's graph-data of December 2022, or a 2.x tree's managing files, such as
# bench/phased_2021.py's), with OpenShift-like edges and metadata: each release
# accepts every lower release of its own minor and of the minor before (as z-stream and
# y-stream updates do), and carries an errata URL. Served with that
# graph-data (its channels, blocked edges and risks), the channels' answers span the
# sizes real clusters get: 1 KB to 175 KB.
#
#   python3 bench/real_releases.py GRAPH_DATA_DIR OUTPUT_DIR
import hashlib, json, os, re, sys
gd, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
versions = set()
for f in os.listdir(os.path.join(gd, "channels")):
    text = open(os.path.join(gd, "channels", f)).read()
    # 1.x: `- 4.8.2`; 2.x managing files: `- {name: 4.8.2, start: ...}` or `- name: 4.8.2`
    for m in re.finditer(r"^\s*-\s*(?:\{\s*)?(?:name:\s*)?['\"]?([0-9]+\.[0-9]+\.[0-9]+[^'\"\s#,}]*)", text, re.M):
        versions.add(m.group(1))
def key(v):
    core, _, pre = v.partition("-")
    nums = tuple(int(x) for x in core.split("+")[0].split("."))
    return nums + ((1,) if not pre else (0, pre))
vs = sorted((v for v in versions if "+" not in v), key=key)
for i, v in enumerate(vs):
    major, minor = key(v)[0], key(v)[1]
    prev = [u for u in vs[:i] if key(u)[0] == major and key(u)[1] in (minor, minor - 1)]
    digest = hashlib.sha256(v.encode()).hexdigest()
    doc = {"kind": "cincinnati-metadata-v0", "version": v, "previous": prev,
           "payload": "quay.io/openshift-release-dev/ocp-release@sha256:" + digest,
           "metadata": {"url": "https://access.redhat.com/errata/RHBA-2022:%04d" % (i % 10000),
                        "description": ""}}
    json.dump(doc, open(os.path.join(out, v + ".json"), "w"))
print(len(vs), "releases")
