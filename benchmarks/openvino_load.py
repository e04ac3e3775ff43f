"""Model-load time of the OpenVINO fast mode in a fresh process: IR cache only vs IR + compiled-blob cache.

Usage (timed; under the shared lock)::

    flock /tmp/bakeoff-bench.lock python benchmarks/openvino_load.py [--rounds 5]

Prepares a temporary bakeoff cache holding the converted IR of the bundled MiniLM encoder and
of the cross-encoder (one bakeoff process converts them), then alternates, ``--rounds`` times,
fresh child processes that each time

* ``ir``: ``core.read_model(model.xml)`` + ``core.compile_model(model, "CPU", config)`` (what
  bakeoff does today when the IR is cached);
* ``blob``: the same with OpenVINO's ``CACHE_DIR`` set (``core.set_property``) to a folder that
  the first ``blob`` round fills (that round is shown as ``blob-fill``), so later rounds import
  the compiled blob instead of compiling;

then run one inference of 32 documents and exit (process exit included, so a hang at
destruction shows). Printed: seconds of ``import openvino`` + read + compile per round, the
child's wall time, the median of each variant and their ratio, the load average, and whether
both variants give bit-identical outputs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, sys, time, hashlib
t0 = time.perf_counter()
import numpy as np
import openvino as ov
t_import = time.perf_counter() - t0
xml, cache_dir, precision = sys.argv[1], sys.argv[2], sys.argv[3]
core = ov.Core()
if cache_dir:
    core.set_property({"CACHE_DIR": cache_dir})
t1 = time.perf_counter()
model = core.read_model(xml)
compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": precision, "PERFORMANCE_HINT": "THROUGHPUT"})
t_compile = time.perf_counter() - t1
rng = np.random.default_rng(0)
names = [p.get_any_name() for p in compiled.inputs]
feed = {n: (rng.integers(1000, 20000, size=(32, 128)) if n == "input_ids" else
            np.ones((32, 128), dtype=np.int64) if n == "attention_mask" else np.zeros((32, 128), dtype=np.int64))
        for n in names}
req = compiled.create_infer_request()
req.infer(feed)
out = np.asarray(req.get_output_tensor(0).data)
print(json.dumps({"import_s": t_import, "compile_s": t_compile, "out": hashlib.sha256(out.tobytes()).hexdigest(),
                  "shape": list(out.shape)}))
"""

PREPARE = r"""
from bakeoff.models.encoders import make_encoder
from bakeoff.models.cross_encoders import CrossEncoderScorer
make_encoder(None, backend="openvino").encode(["an example"], kind="doc")
CrossEncoderScorer(seed=0, backend="openvino").score([("q", "d")])
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--precision", default="bf16", choices=["bf16", "f32"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bakeoff-ovload-") as tmp_s:
        tmp = Path(tmp_s)
        env = {**os.environ, "BAKEOFF_CACHE_DIR": str(tmp / "cache"), "HF_HUB_OFFLINE": "1"}
        subprocess.run([sys.executable, "-c", PREPARE], env=env, check=True, capture_output=True, timeout=900)
        models = sorted((tmp / "cache" / "openvino").glob("*/model.xml"))
        print(f"IR folders: {len(models)}; load average {os.getloadavg()[0]:.2f}")
        for xml in models:
            blob_dir = tmp / f"blob-{xml.parent.name}"
            rows: dict[str, list[dict[str, float]]] = {"ir": [], "blob-fill": [], "blob": []}
            for r in range(args.rounds):
                for variant in ("ir", "blob"):
                    v = "blob-fill" if variant == "blob" and r == 0 else variant
                    t0 = time.perf_counter()
                    p = subprocess.run([sys.executable, "-c", CHILD, str(xml), str(blob_dir) if variant == "blob" else "",
                                        args.precision], check=False, env=env, capture_output=True, text=True, timeout=600)
                    wall = time.perf_counter() - t0
                    if p.returncode != 0:
                        raise SystemExit(f"{v} round {r} failed: {p.stderr[-2000:]}")
                    row = json.loads(p.stdout.strip().splitlines()[-1]) | {"wall_s": wall, "load": os.getloadavg()[0]}
                    rows[v].append(row)
            size = sum(f.stat().st_size for f in blob_dir.glob("*")) / 2**20
            label = "encoder" if len(rows["ir"][0]["shape"]) == 3 else "cross-encoder"
            print(f"\n{xml.parent.name} ({label}, {args.precision}); compiled blob cache {size:.0f} MiB")
            print(f"{'variant':10s} {'import+compile s (per round)':>40s} {'median':>7s} {'child wall s median':>20s}")
            rows = {v: rs for v, rs in rows.items() if rs}
            for v, rs in rows.items():
                per = " ".join(f"{x['import_s'] + x['compile_s']:.2f}" for x in rs)
                print(f"{v:10s} {per:>40s} {statistics.median(x['import_s'] + x['compile_s'] for x in rs):7.2f} "
                      f"{statistics.median(x['wall_s'] for x in rs):20.2f}")
            if "blob" not in rows:
                continue
            ir = statistics.median(x["compile_s"] for x in rows["ir"])
            blob = statistics.median(x["compile_s"] for x in rows["blob"])
            outs = {x["out"] for rs in rows.values() for x in rs}
            print(f"compile median: ir {ir:.3f} s, blob {blob:.3f} s -> {ir / blob:.1f}x; outputs identical: "
                  f"{len(outs) == 1}; load {min(x['load'] for rs in rows.values() for x in rs):.2f}-"
                  f"{max(x['load'] for rs in rows.values() for x in rs):.2f}")


if __name__ == "__main__":
    main()
