"""An independent, minimal transcription of LEAF's FEMNIST scripts (TalwalkarLab/leaf @ 09ec454).

data/femnist/preprocess/{get_file_dirs,get_hashes,match_hashes,group_by_writer,data_to_json}.py
and data/utils/{sample,remove_users,split_data,util}.py, step by step, on an unpacked SD19
(folder walks, MD5 of the PNG bytes, Pillow, Python's ``random``).  The one change: every
directory listing is sorted (docs/femnist.md says why).  It imports nothing of mnistforge:
``tests/test_build_femnist.py`` compares the builder with it and
``benchmarks/bench_femnist.py`` times it.

Each step handles one file at a time, with the random generator passed along, so the
benchmark can stream LEAF's JSON files to disk as LEAF does (one file in memory at a time)
while the test keeps them all.
"""
from __future__ import annotations

import hashlib
import json
import os
import random

import numpy as np
from PIL import Image

MAX_WRITERS = 100


def _ls(d):
    return sorted(os.listdir(d))


def leaf_writers(raw):
    """get_file_dirs.py, get_hashes.py, match_hashes.py, group_by_writer.py."""
    class_files, write_files = [], []
    bc = os.path.join(raw, "by_class")
    for cl in [c for c in _ls(bc) if len(c) == 2]:
        for sub in [s for s in _ls(os.path.join(bc, cl)) if "hsf" in s and "mit" not in s]:
            for im in _ls(os.path.join(bc, cl, sub)):
                class_files.append((cl, os.path.join(bc, cl, sub, im)))
    bw = os.path.join(raw, "by_write")
    for part in _ls(bw):
        for writer in _ls(os.path.join(bw, part)):
            for wtype in _ls(os.path.join(bw, part, writer)):
                for im in _ls(os.path.join(bw, part, writer, wtype)):
                    write_files.append((writer, os.path.join(bw, part, writer, wtype, im)))

    def md5(p):
        with open(p, "rb") as f:
            return hashlib.md5(f.read()).hexdigest()

    class_hashes = [(c, f, md5(f)) for c, f in class_files]
    write_hashes = [(w, f, md5(f)) for w, f in write_files]
    class_hash_dict = {}
    for i in range(len(class_hashes)):
        c, f, h = class_hashes[len(class_hashes) - i - 1]
        class_hash_dict[h] = (c, f)
    write_class = [(w, f, class_hash_dict[h][0]) for w, f, h in write_hashes]
    writers, cimages = [], []
    cw = write_class[0][0]
    for w, f, c in write_class:
        if w != cw:
            writers.append((cw, cimages))
            cw = w
            cimages = [(f, c)]
        cimages.append((f, c))
    writers.append((cw, cimages))
    return writers


def relabel_class(c):
    if c.isdigit() and int(c) < 40:
        return int(c) - 30
    elif int(c, 16) <= 90:
        return int(c, 16) - 55
    return int(c, 16) - 61


def leaf_all_data_files(raw):
    """data_to_json.py: yields ``(file name, data)``, 100 writers a file."""
    writers = leaf_writers(raw)
    users, num_samples, user_data, k_file = [], [], {}, 0
    for k, (w, lst) in enumerate(writers):
        users.append(w)
        num_samples.append(len(lst))
        user_data[w] = {"x": [], "y": []}
        for f, c in lst:
            gray = Image.open(f).convert("L")
            gray.thumbnail((28, 28), Image.LANCZOS)
            vec = (np.asarray(gray).copy().flatten() / 255).tolist()
            user_data[w]["x"].append(vec)
            user_data[w]["y"].append(relabel_class(c))
        if len(users) == MAX_WRITERS or k == len(writers) - 1:
            yield f"all_data_{k_file}.json", {"users": users, "num_samples": num_samples,
                                               "user_data": user_data}
            k_file += 1
            users, num_samples, user_data = [], [], {}


def iid_divide(seq, g):
    size = int(len(seq) / g)
    big = len(seq) - g * size
    small = g - big
    gl = [seq[size * i:size * (i + 1)] for i in range(small)]
    bi = size * small
    size += 1
    return gl + [seq[bi + size * i:bi + size * (i + 1)] for i in range(big)]


def leaf_sample_file(f, data, rng, iid, fraction, u, state):
    """sample.py, one file (``state["new_user_count"]`` carries across files)."""
    data = dict(data, users=list(data["users"]))   # shuffled in place by LEAF: not the caller's
    num_users = len(data["users"])
    tot = sum(data["num_samples"])
    num_new = int(fraction * tot)
    if iid:
        raw_list = list(data["user_data"].values())
        x_list = [i for e in raw_list for i in e["x"]]
        y_list = [i for e in raw_list for i in e["y"]]
        n_users = int(round(u * num_users)) or 1
        new_idx = rng.sample([i for i in range(tot)], num_new)
        users = [str(i + state["new_user_count"]) for i in range(n_users)]
        xs, ys = [x_list[i] for i in new_idx], [y_list[i] for i in new_idx]
        user_data = {us: {"x": x, "y": y} for us, x, y in zip(users, iid_divide(xs, n_users),
                                                              iid_divide(ys, n_users))}
        num_samples = [len(user_data[us]["y"]) for us in users]
        state["new_user_count"] += n_users
    else:
        users = data["users"]
        rng.shuffle(users)
        ctot, user_i, num_samples, user_data = 0, 0, [], {}
        while ctot < num_new:
            user = users[user_i]
            cdata = data["user_data"][user]
            cn = len(cdata["y"])
            if ctot + cn > num_new:
                cn = num_new - ctot
                new_idx = rng.sample([i for i in range(cn)], cn)
                cdata = {"x": [cdata["x"][i] for i in new_idx], "y": [cdata["y"][i] for i in new_idx]}
            num_samples.append(cn)
            user_data[user] = cdata
            ctot += cn
            user_i += 1
        users = users[:user_i]
    label = str(fraction)[2:]
    if iid:
        label = f"{str(u)[2:]}_{label}"
    return (f"{f[:-5]}_{'iid' if iid else 'niid'}_{label}.json",
            {"users": users, "num_samples": num_samples, "user_data": user_data})


def leaf_remove_file(f, data, k):
    """remove_users.py, one file."""
    keep = [i for i, n in enumerate(data["num_samples"]) if n >= k]
    users = [data["users"][i] for i in keep]
    return (f"{f[:-5]}_keep_{k}.json",
            {"users": users, "num_samples": [data["num_samples"][i] for i in keep],
             "user_data": {us: data["user_data"][us] for us in users}})


def leaf_split_file_by_sample(f, data, rng, frac):
    """split_data.py --by_sample, one file."""
    label = str(frac)[2:]
    ns_tr, ud_tr, ns_te, ud_te, keep = [], {}, [], {}, []
    for i, u in enumerate(data["users"]):
        n = len(data["user_data"][u]["y"])
        if n >= 2:
            ntr = max(1, int(frac * n))
            if n == 2:
                ntr = 1
            tr_idx = rng.sample([j for j in range(n)], ntr)
            te_idx = [j for j in range(n) if j not in tr_idx]
            if len(tr_idx) >= 1 and len(te_idx) >= 1:
                keep.append(i)
                ns_tr.append(ntr)
                ns_te.append(n - ntr)
                ud_tr[u] = {"x": [], "y": []}
                ud_te[u] = {"x": [], "y": []}
                for j in range(n):
                    side = ud_tr[u] if j in tr_idx else ud_te[u]
                    side["x"].append(data["user_data"][u]["x"][j])
                    side["y"].append(data["user_data"][u]["y"][j])
    users = [data["users"][i] for i in keep]
    return ((f"{f[:-5]}_train_{label}.json", {"users": users, "num_samples": ns_tr, "user_data": ud_tr}),
            (f"{f[:-5]}_test_{label}.json", {"users": users, "num_samples": ns_te, "user_data": ud_te}))


def leaf_split_by_user(files, rng, frac):
    """split_data.py --by_user (all files at once; one train and one test file)."""
    label = str(frac)[2:]
    user_files = [(u, ns, f) for f, d in files for u, ns in zip(d["users"], d["num_samples"])]
    data_of = dict(files)
    n = len(user_files)
    train_idx = rng.sample([i for i in range(n)], int(frac * n))
    sides = []
    for which, members in (("train", [x for i, x in enumerate(user_files) if i in train_idx]),
                           ("test", [x for i, x in enumerate(user_files) if i not in train_idx])):
        f = members[-1][2]
        num_i = f.find("data") + 5
        rest = f[num_i:]
        p = rest.find("_")
        nf = "%s_%d%s" % (f[:num_i - 1], 0, rest[p:] if p != -1 else ".json")
        sides.append([(f"{nf[:-5]}_{which}_{label}.json",
                       {"users": [u for u, _, _ in members], "num_samples": [ns for _, ns, _ in members],
                        "user_data": {u: data_of[ff]["user_data"][u] for u, _, ff in members}})])
    return sides


def leaf_pipeline(raw, *, s="niid", sf=1.0, iu=0.01, k=0, t="sample", tf=0.9,
                  smplseed=1549786595, spltseed=1549786796, all_data=None):
    """preprocess.sh ``-s s --sf sf --iu iu -k k -t t --tf tf``: every stage kept in memory."""
    stages = {"all_data": list(all_data if all_data is not None else leaf_all_data_files(raw))}
    cur = stages["all_data"]
    if s is not None:
        rng, state = random.Random(smplseed), {"new_user_count": 0}
        cur = [leaf_sample_file(f, d, rng, s == "iid", sf, iu, state) for f, d in cur]
    if k is not None:   # preprocess.sh runs remove_users.py only when -k is given
        cur = [leaf_remove_file(f, d, k) for f, d in cur]
    rng = random.Random(spltseed)
    if t == "user":
        stages["train"], stages["test"] = leaf_split_by_user(cur, rng, tf)
    else:
        pairs = [leaf_split_file_by_sample(f, d, rng, tf) for f, d in cur]
        stages["train"], stages["test"] = [p[0] for p in pairs], [p[1] for p in pairs]
    return stages


def leaf_pipeline_to_disk(raw, out, *, sf=1.0, k=0, tf=0.9, smplseed=1549786595,
                          spltseed=1549786796):
    """``-s niid --sf sf -k k -t sample --tf tf`` streamed as LEAF runs it: every stage's JSON
    written to ``out/data/<stage>/`` (one file in memory at a time); returns the sample count."""
    for d in ("all_data", "sampled_data", "rem_user_data", "train", "test"):
        os.makedirs(os.path.join(out, "data", d), exist_ok=True)
    srng, prng, state, n = random.Random(smplseed), random.Random(spltseed), {"new_user_count": 0}, 0

    def dump(folder, name, data):
        # written, then read back by the next script, as preprocess.sh's steps do
        path = os.path.join(out, "data", folder, name)
        with open(path, "w") as f:
            json.dump(data, f)
        with open(path) as f:
            return json.load(f)

    for f, d in leaf_all_data_files(raw):
        d = dump("all_data", f, d)
        f, d = leaf_sample_file(f, d, srng, False, sf, 0.01, state)
        d = dump("sampled_data", f, d)
        f, d = leaf_remove_file(f, d, k)
        d = dump("rem_user_data", f, d)
        (ftr, dtr), (fte, dte) = leaf_split_file_by_sample(f, d, prng, tf)
        dump("train", ftr, dtr)
        dump("test", fte, dte)
        n += sum(dtr["num_samples"]) + sum(dte["num_samples"])
    return n
