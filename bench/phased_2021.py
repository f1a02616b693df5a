# The OpenShift graph of November 2021 as graph-data 2.0.0, for the "percluster" case of
# bench/http_vs_nginx.sh. From the shared fixture (OpenShift's graph-data of December
# 2022) it keeps raw/, the blocked edges into the releases it keeps (their risks too),
# and turns EVERY channel file of the fixture into a 2.x managing file, all of them with
# phased rollouts (P2D for patch updates, P14D for minor ones: the worst case for the
# server's memory).
#
# Only releases out by the end of November 2021 are kept, by a plain cut per minor:
# every listed 4.1.z-4.6.z (prereleases, hotfix builds and -s390x/+amd64 variants
# included), 4.7.z up to 4.7.38, 4.8.z up to 4.8.22, 4.9.z up to 4.9.8 (prereleases of
# 4.7.0, 4.8.0 and 4.9.0 precede them, so they stay), and no 4.10+ release. Channels
# named for 4.10 and later (candidate-, fast-, stable- and eus-4.10, all of 4.11+) are
# dropped: they did not exist yet (some still list 4.8.z or 4.9.z, eus-4.10 for one);
# so is a channel left empty (none is). That leaves 29 channels.
#
# A managing file gives every one of its channels all of its versions, and a channel
# may be managed by one file only; so channels whose kept lists are the same share a
# file (fast-4.y and stable-4.y for y = 3, 4, 5, 7, 8, 9; stable-4.8 and fast-4.8 in
# channels/4.8.yaml as before), and every other channel has its own file, named after
# it. The loader has no other rule (nothing about majors; all are 4 here anyway).
# The fixture's +amd64 variants of 4.2.z and 4.3.z stay listed, as they are in the
# fixture, but bench/real_releases.py makes no release for them, so they are no nodes.
#
# Start times: `start` is per version entry of a managing file (the graph builder
# records it per channel); a version listed by several files gets the same start in
# each. Starts follow the weekly z-stream cadence per minor. The weekly slots of minor
# 4.y are its plain releases (X.Y.Z, no suffix) that some kept stable-* channel lists, in
# version order, one a week, the last on the minor's date below. The minor's other
# versions (prereleases, hotfix builds, -s390x/+amd64 variants, releases that never
# reached stable) fall between their neighbouring slots in version order: k of them
# between two slots are spread evenly over that week (slot + i/(k+1) week); those below
# the first slot (4.y.0's prereleases, and 4.y.0 or early 4.y.z when no stable channel
# lists them) are a day apart, the last a day before it; those above the last
# slot (none in this fixture) would be spread over the week after it, the slots then
# ending a week before the minor's date so that the highest version is on it. Dates of
# each minor's highest version:
#   4.1 2020-04-01, 4.2 2020-07-01, 4.3 2020-10-01, 4.4 2021-02-01, 4.5 2021-06-01,
#   4.6 2021-11-10, 4.7 2021-11-22, 4.8 2021-11-25, 4.9 2021-11-24 (all 00:00Z).
# The slots of 4.7 and 4.8 are exactly stable-4.8's 4.7.z and 4.8.z, so stable-4.8 is
# as before: 52 releases, 4.7.0-4.7.38 and 4.8.2-4.8.22, 4.8.z one a week with the last
# on 2021-11-25 and 4.7.z one a week with the last on 2021-11-22 (checked below).
#
# At 2021-11-26T00:00:00Z, a day after the last 4.8 release (the case's --testing.now),
# 94 edges of stable-4.8 into 4.8.17-4.8.22 are in their windows: an edge begins at the
# later start of its ends, so the edges from 4.7.37 and 4.7.38 (out within 14 days) to
# every 4.8.y not blocked from 4.7 are, and so are the edges into 4.8.21 and 4.8.22
# (4.8.22's patch edges too, within their 2 days). A cluster's place in a window depends
# on its id and the target release, so 1,000 random ids see about 400 distinct edge
# sets of stable-4.8.
#
#   python3 bench/phased_2021.py GRAPH_DATA_DIR OUTPUT_DIR
#
# Releases for the tree: python3 bench/real_releases.py OUTPUT_DIR RELEASES_DIR.
import datetime, os, re, shutil, sys

gd, out = sys.argv[1], sys.argv[2]
LAST_PATCH = {7: 38, 8: 22, 9: 8}  # minors cut by patch; below: every release; 10+: none
FIRST_DROPPED_MINOR = 10
UTC = datetime.timezone.utc
DATES = {1: datetime.datetime(2020, 4, 1, tzinfo=UTC), 2: datetime.datetime(2020, 7, 1, tzinfo=UTC),
         3: datetime.datetime(2020, 10, 1, tzinfo=UTC), 4: datetime.datetime(2021, 2, 1, tzinfo=UTC),
         5: datetime.datetime(2021, 6, 1, tzinfo=UTC), 6: datetime.datetime(2021, 11, 10, tzinfo=UTC),
         7: datetime.datetime(2021, 11, 22, tzinfo=UTC), 8: datetime.datetime(2021, 11, 25, tzinfo=UTC),
         9: datetime.datetime(2021, 11, 24, tzinfo=UTC)}
WEEK, DAY = datetime.timedelta(weeks=1), datetime.timedelta(days=1)
RULES = "  phasedRollouts:\n  - {fromVersion: patch, duration: P2D}\n  - {fromVersion: minor, duration: P14D}\n"
SHARED_FILE = {frozenset(["fast-4.8", "stable-4.8"]): "4.8"}  # as before this script covered all


def parse(v):
    m = re.fullmatch(r"([0-9]+)\.([0-9]+)\.([0-9]+)(?:-([0-9A-Za-z.-]+))?(?:\+([0-9A-Za-z.-]+))?", v)
    if not m:
        sys.exit("not a version: %r" % v)
    return m


def key(v):  # SemVer precedence, then the build metadata (for a stable order)
    m = parse(v)
    pre = m.group(4)
    ids = tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in pre.split(".")) if pre else ()
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)), 0 if pre else 1, ids, m.group(5) or "")


def minor(v):
    return key(v)[1]


def plain(v):
    return re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", v) is not None


def kept(v):
    k = key(v)
    if k[0] != 4 or k[1] >= FIRST_DROPPED_MINOR:
        return False
    return k[1] not in LAST_PATCH or k[:3] <= (4, k[1], LAST_PATCH[k[1]])


def listed(path):
    text = open(path).read()
    return re.findall(r"^-\s*['\"]?([0-9]+\.[0-9]+\.[0-9]+[^'\"\s#]*)['\"]?\s*$", text, re.M)


# Channels and their kept versions.
channels = {}
for name in sorted(os.listdir(os.path.join(gd, "channels"))):
    if not name.endswith(".yaml"):
        continue
    path = os.path.join(gd, "channels", name)
    channel = re.search(r"^name:\s*['\"]?([^'\"\s]+)", open(path).read(), re.M).group(1)
    m = re.fullmatch(r"[a-z]+-([0-9]+)\.([0-9]+)", channel)
    if m and (int(m.group(1)), int(m.group(2))) >= (4, FIRST_DROPPED_MINOR):
        continue
    versions = sorted({v for v in listed(path) if kept(v)}, key=key)
    if versions:
        channels[channel] = versions

# Start times per minor (see the header).
every = sorted({v for vs in channels.values() for v in vs}, key=key)
slot_versions = {v for c, vs in channels.items() if c.startswith("stable-") for v in vs if plain(v)}
starts = {}
for y in sorted({minor(v) for v in every}):
    vs = [v for v in every if minor(v) == y]
    slots = [i for i, v in enumerate(vs) if v in slot_versions]
    if not slots:
        sys.exit("4.%d: no release in a stable channel" % y)
    tail = len(vs) - 1 - slots[-1]
    last = DATES[y] - (WEEK if tail else datetime.timedelta(0))
    for j, i in enumerate(slots):
        starts[vs[i]] = last - (len(slots) - 1 - j) * WEEK
    for i in range(slots[0]):  # below the first slot: a day apart
        starts[vs[i]] = starts[vs[slots[0]]] - (slots[0] - i) * DAY
    for a, b in zip(slots, slots[1:]):  # between two slots: evenly over the week
        for n, i in enumerate(range(a + 1, b), 1):
            starts[vs[i]] = starts[vs[a]] + datetime.timedelta(seconds=604800 * n // (b - a))
    for n, i in enumerate(range(slots[-1] + 1, len(vs)), 1):  # above the last: the week to the date
        starts[vs[i]] = last + datetime.timedelta(seconds=604800 * n // tail)
    assert starts[vs[-1]] == DATES[y], y

# stable-4.8 must be what this case measured before: its own 4.7.z and 4.8.z, weekly, the
# last on 2021-11-22 and 2021-11-25.
s48 = channels["stable-4.8"]
for y, date in ((7, DATES[7]), (8, DATES[8])):
    in_stream = [v for v in s48 if minor(v) == y]
    for i, v in enumerate(in_stream):
        if starts[v] != date - (len(in_stream) - 1 - i) * WEEK:
            sys.exit("stable-4.8's %s would start at %s, not as before" % (v, starts[v]))
if len(s48) != 52 or s48[0] != "4.7.0" or s48[-1] != "4.8.22":
    sys.exit("stable-4.8 is not 52 releases 4.7.0-4.8.22: %d, %s-%s" % (len(s48), s48[0], s48[-1]))

if os.path.exists(out):
    shutil.rmtree(out)
os.makedirs(os.path.join(out, "channels"))
shutil.copytree(os.path.join(gd, "raw"), os.path.join(out, "raw"))
with open(os.path.join(out, "version"), "w") as f:
    f.write("2.0.0\n")

# Blocked edges (and risks) whose `to` is a kept release; the others block nothing here.
os.makedirs(os.path.join(out, "blocked-edges"))
kept_versions = set(every)
blocks = 0
for name in sorted(os.listdir(os.path.join(gd, "blocked-edges"))):
    path = os.path.join(gd, "blocked-edges", name)
    m = re.search(r"^to:\s*['\"]?([^'\"\s]+)", open(path).read(), re.M)
    if m and m.group(1) in kept_versions:
        shutil.copy(path, os.path.join(out, "blocked-edges", name))
        blocks += 1

# Managing files: one per distinct list of versions.
groups = {}
for c, vs in channels.items():
    groups.setdefault(tuple(vs), []).append(c)
for vs, names in sorted(groups.items(), key=lambda g: g[1]):
    names.sort()
    stem = SHARED_FILE.get(frozenset(names), "+".join(names))
    with open(os.path.join(out, "channels", stem + ".yaml"), "w") as f:
        f.write("# %s as of November 2021 (bench/phased_2021.py).\nchannels:\n" % " and ".join(names))
        for c in names:
            f.write("- name: %s\n" % c + RULES)
        f.write("versions:\n")
        for v in vs:
            f.write('- {name: %s, start: "%s"}\n' % (v, starts[v].strftime("%Y-%m-%dT%H:%M:%SZ")))
print("%d channels in %d managing files, %d versions (%s to %s), %d blocked edges; stable-4.8: %d releases (%s to %s)"
      % (len(channels), len(groups), len(every), every[0], every[-1], blocks, len(s48), s48[0], s48[-1]))
