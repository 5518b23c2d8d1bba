"""Carry NeuSight's published GPU measurements into the package, compact (SPEC §24): what the datasheet
model learns from and what its checks compare with, with the licence and source beside them.

    python benchmarks/neusight_import.py NEUSIGHT_DATA     # the published folder; writes src/dawnbench/prediction/neusight/

Reads the folder as published (its README says what each file is) and writes:

* ``kernels.csv.gz`` — one row per single-kernel timing: op, GPU, the shape columns, latency (ms). The kernel
  names and launch geometry are dropped (the model's inputs are the op's shape and the datasheet only);
* ``labels.csv`` — one row per whole-model label: model, mode, sequence length, batch, GPU, forward, backward and
  end-to-end latency (ms); ``-fusion`` labels (torch.compile) are not carried: the census is eager;
* ``peers.csv`` — as published (the measured case and NeuSight's, Habitat's, Li et al.'s and a roofline's
  predictions of it);
* ``model_configs/`` — the Hugging Face configs of the labelled models; ``LICENSE`` (MIT) and ``README.md``.

A row that disagrees with itself is left out and named in the README it writes: a latency that is not a positive
number, a kernel faster than its GPU's datasheet allows (FLOPs over the fp32 peak, or bytes over the memory
bandwidth, by more than ``ABOVE_DATASHEET``), a label whose end-to-end time is not its forward plus backward.
The project never reads that folder at run or test time; this script is run by hand when the source changes.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "dawnbench" / "prediction" / "neusight"
SHAPES = {"bmm": ("B", "M", "N", "K"), "linear": ("B", "M", "N", "K"),
          "conv": ("B", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding")}
VECTOR = ("B", "H")
LABELLED_MODELS = ("bert_large", "gpt2_large", "gpt3_xl", "gpt3_27", "opt_13", "switchxl4")
ABOVE_DATASHEET = 1.05          # a kernel may beat its roofline by rounding, no more
WINOGRAD = 4.0                  # cuDNN's Winograd F(4x4, 3x3) does a quarter of a direct convolution's multiplies
SUM_TOLERANCE = 1e-3            # a label's e2e against fw + bw, relative


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.TextIOWrapper(gzip.open(path), "utf-8")))


def _work(op: str, dims: list[int]) -> tuple[float, float]:
    """FLOPs and the least bytes (fp32) of one kernel, as the datasheet check counts them."""
    if op in ("bmm", "linear"):
        b, m, n, k = dims
        return 2.0 * b * m * n * k, 4.0 * b * (m * k + n * k + m * n) if op == "bmm" else 4.0 * (b * m * k + n * k
                                                                                              + b * m * n)
    if op == "conv":
        b, cin, cout, r, size, stride, pad = dims
        out = (size + 2 * pad - r) // stride + 1
        return 2.0 * b * cout * out * out * cin * r * r, 4.0 * (b * cin * size * size + cout * cin * r * r
                                                               + b * cout * out * out)
    b, h = dims
    operands = 3 if op in ("add", "mul", "div", "pow") else 2
    return float(b * h), 4.0 * operands * b * h


def main(source: Path) -> None:
    configs = {p.stem: json.loads(p.read_text()) for p in (source / "device_configs").glob("*.json")}
    left_out: list[str] = []
    kernels = []
    for folder in sorted((source / "kernels").iterdir()):
        op = folder.name
        columns = SHAPES.get(op, VECTOR)
        for path in sorted(folder.glob("*.csv.gz")):
            gpu = path.name.removesuffix(".csv.gz")
            sheet = configs[gpu]
            for number, row in enumerate(_rows(path), 2):
                where = f"kernels/{op}/{path.name}:{number}"
                try:
                    latency = float(row["Latency"])
                    dims = [int(row[c]) for c in columns]
                except (KeyError, ValueError):
                    left_out.append(f"{where}: a latency or shape that is not a number")
                    continue
                if not (math.isfinite(latency) and latency > 0) or min(dims) < (0 if op == "conv" else 1):
                    left_out.append(f"{where}: latency {row['Latency']} or a shape below 1")
                    continue
                flops, moved = _work(op, dims)
                floor_ms = max(flops / (sheet["SingleFLOPs"] * 1e9), moved / (sheet["Mem_Bw"] * 1e9)) * 1e3
                if op == "conv":      # fast algorithms (Winograd, FFT) do fewer FLOPs than the direct count
                    floor_ms = max(flops / WINOGRAD / (sheet["SingleFLOPs"] * 1e9), moved / (sheet["Mem_Bw"] * 1e9)) * 1e3
                if op in ("bmm", "linear", "conv") and latency * ABOVE_DATASHEET < floor_ms:
                    left_out.append(f"{where}: {latency:.4g} ms, faster than its datasheet allows ({floor_ms:.4g} ms)")
                    continue
                kernels.append([op, gpu, *dims, f"{latency:.6g}"])
    labels = []
    for gpu_dir in sorted((source / "labels").iterdir()):
        for path in sorted(gpu_dir.glob("*.json")):
            if path.stem.endswith("-fusion"):
                continue
            model, mode, seqlen, batch = path.stem.rsplit("-", 3)
            doc = json.loads(path.read_text())
            fw, bw, e2e = (float(doc[k]) for k in ("fw_latency", "bwall_latency", "e2e_latency"))
            if not (fw > 0 and bw >= 0 and abs(fw + bw - e2e) <= SUM_TOLERANCE * e2e):
                left_out.append(f"labels/{gpu_dir.name}/{path.name}: e2e {e2e:.6g} ms is not fw {fw:.6g} + bw "
                                f"{bw:.6g} ms")
                continue
            labels.append([model, mode, int(seqlen), int(batch), gpu_dir.name, f"{fw:.6g}", f"{bw:.6g}",
                           f"{e2e:.6g}"])
    if OUT.exists():
        shutil.rmtree(OUT)
    (OUT / "model_configs").mkdir(parents=True)
    with gzip.open(OUT / "kernels.csv.gz", "wt", newline="", compresslevel=9) as f:
        out = csv.writer(f)
        out.writerow(["op", "gpu", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "latency_ms"])
        for row in kernels:
            out.writerow([*row[:-1], *[""] * (10 - len(row)), row[-1]])
    with open(OUT / "labels.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["model", "mode", "seqlen", "batch", "gpu", "fw_ms", "bw_ms", "e2e_ms"])
        out.writerows(labels)
    shutil.copy(source / "peers.csv", OUT / "peers.csv")
    shutil.copy(source / "LICENSE", OUT / "LICENSE")
    for model in LABELLED_MODELS:
        shutil.copy(source / "model_configs" / f"{model}.json", OUT / "model_configs" / f"{model}.json")
    gpus = sorted({r[1] for r in kernels})
    shown = "\n".join(f"- `{n}`" for n in left_out) or "- none"
    table = "\n".join([
        f"| `kernels.csv.gz` | {len(kernels):,} single-kernel timings on {len(gpus)} GPUs ({', '.join(gpus)}): `op`, "
        "`gpu`, the shape (`d0…`: bmm/linear `B, M, N, K`; conv `B, C_in, C_out, kernel, input size, stride, padding`; "
        "softmax, ln and the elementwise ops `B, H`), `latency_ms` |",
        f"| `labels.csv` | {len(labels)} whole-model latencies: forward (`fw_ms`), backward (`bw_ms`, training only; the "
        "loss untimed, no optimizer step) and their sum, eager (the `-fusion` labels under torch.compile are not "
        "carried) |",
        "| `peers.csv` | each labelled case beside the published predictions of NeuSight, Habitat, Li et al. and a "
        "roofline (ms), as published |"])
    (OUT / "README.md").write_text(f"""# NeuSight's GPU measurements, as carried by dawnbench

Measured data published with **NeuSight** (Lee, Phanishayee, Mahajan: "Forecasting GPU Performance for Deep
Learning Training and Inference", ASPLOS 2025), repository sitar-lab/NeuSight at commit 6945927, folder
`scripts/asplos/`, under the MIT licence — `LICENSE` beside this file goes with every copy. Only data is here,
none of its code; the numbers are its authors', measured on real GPUs in **fp32** (PyTorch 2.1.0, CUDA 12.1,
cuDNN 8.9, TF32 off), latencies in **milliseconds**. Written by `benchmarks/neusight_import.py`.

| file | what |
|---|---|
{table}
| `model_configs/` | the Hugging Face configs of the labelled models |

Left out, each disagreeing with itself ({len(left_out)}):
{shown}
""")
    print(f"{len(kernels):,} kernel rows, {len(labels)} labels, {len(left_out)} left out -> {OUT}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python benchmarks/neusight_import.py NEUSIGHT_DATA (the folder of NeuSight's published data)")
    main(Path(sys.argv[1]))
