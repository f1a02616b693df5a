# A real-size channel with one new release, as graph-data 2.0.0 plus release documents,
# for bench/fleet_cases.sh (what phased rollouts and automatic brakes buy a
# fleet).
#
# From the shared fixture (OpenShift's graph-data of December 2022) it keeps one channel
# (stable-4.11 by default: 52 releases, 4.10.3 to 4.11.18), its blocked edges and risks
# (those whose `to` is in the channel) and raw/, and adds a NEW release (4.11.19) after
# its last. Edges are as bench/real_releases.py makes them: each release accepts every
# lower release of its own minor and of the minor before, so the new release is reached
# from every 4.10.z and 4.11.z of the channel; a cluster's answer is about 100 KB.
#
# The channel's releases all started 60 days before --start; the new one starts at
# --start + --new-after. With --phased DURATION (an ISO 8601 duration such as P7D) the
# channel rolls every update out over that window (one default rule), so the new
# release's edges reach each cluster at its own instant; with --phased none, everyone
# sees them at once.
#
#   python3 bench/fleet_graph_data.py FIXTURE_GRAPH_DATA OUT --start 2026-01-01T00:00:00Z
#       [--channel stable-4.11] [--new 4.11.19] [--new-after-hours 24] [--phased P7D|none]
#
# Writes OUT/releases/*.json and OUT/graph-data/, and prints the previous release (the
# `from` of the edge the bench makes fail).
import argparse, datetime, hashlib, json, os, re, shutil, sys

p = argparse.ArgumentParser()
p.add_argument("fixture")
p.add_argument("out")
p.add_argument("--start", required=True)
p.add_argument("--channel", default="stable-4.11")
p.add_argument("--new", default="4.11.19")
p.add_argument("--new-after-hours", type=float, default=24)
p.add_argument("--phased", default="none")
a = p.parse_args()


def key(v):
    core, _, pre = v.partition("-")
    nums = tuple(int(x) for x in core.split("+")[0].split("."))
    return nums + ((1,) if not pre else (0, pre))


text = open(os.path.join(a.fixture, "channels", a.channel + ".yaml")).read()
listed = re.findall(r"^-\s*['\"]?([0-9]+\.[0-9]+\.[0-9]+[^'\"\s#]*)['\"]?\s*$", text, re.M)
versions = sorted({v for v in listed if "+" not in v}, key=key)
if not versions:
    sys.exit("no versions in channel %s" % a.channel)
if key(a.new) <= key(versions[-1]):
    sys.exit("--new %s is not after the channel's last release %s" % (a.new, versions[-1]))
previous = versions[-1]
versions.append(a.new)

start = datetime.datetime.strptime(a.start, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
old = start - datetime.timedelta(days=60)
new = start + datetime.timedelta(hours=a.new_after_hours)
fmt = "%Y-%m-%dT%H:%M:%SZ"

if os.path.exists(a.out):
    shutil.rmtree(a.out)
rel, gd = os.path.join(a.out, "releases"), os.path.join(a.out, "graph-data")
os.makedirs(rel)
os.makedirs(os.path.join(gd, "channels"))
os.makedirs(os.path.join(gd, "blocked-edges"))
shutil.copytree(os.path.join(a.fixture, "raw"), os.path.join(gd, "raw"))
with open(os.path.join(gd, "version"), "w") as f:
    f.write("2.0.0\n")

for i, v in enumerate(versions):
    major, minor = key(v)[0], key(v)[1]
    prev = [u for u in versions[:i] if key(u)[0] == major and key(u)[1] in (minor, minor - 1)]
    doc = {"kind": "cincinnati-metadata-v0", "version": v, "previous": prev,
           "payload": "quay.io/openshift-release-dev/ocp-release@sha256:" + hashlib.sha256(v.encode()).hexdigest(),
           "metadata": {"url": "https://access.redhat.com/errata/RHBA-2022:%04d" % i, "description": ""}}
    with open(os.path.join(rel, v + ".json"), "w") as f:
        json.dump(doc, f)

kept = set(versions)
blocks = 0
for name in sorted(os.listdir(os.path.join(a.fixture, "blocked-edges"))):
    path = os.path.join(a.fixture, "blocked-edges", name)
    m = re.search(r"^to:\s*['\"]?([^'\"\s]+)", open(path).read(), re.M)
    if m and m.group(1) in kept:
        shutil.copy(path, os.path.join(gd, "blocked-edges", name))
        blocks += 1

with open(os.path.join(gd, "channels", a.channel + ".yaml"), "w") as f:
    f.write("# %s of December 2022 and a new release %s (bench/fleet_graph_data.py).\n" % (a.channel, a.new))
    f.write("channels:\n- name: %s\n" % a.channel)
    if a.phased != "none":
        f.write("  phasedRollouts:\n  - duration: %s\n" % a.phased)
    f.write("versions:\n")
    for v in versions:
        f.write('- {name: %s, start: "%s"}\n' % (v, (new if v == a.new else old).strftime(fmt)))
print(previous)
print("%s: %d releases (%s to %s, new %s at %s), %d blocked edges, phased %s" %
      (a.channel, len(versions), versions[0], previous, a.new, new.strftime(fmt), blocks, a.phased), file=sys.stderr)
