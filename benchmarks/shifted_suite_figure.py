"""The picture of the shifted suite in the docs: every family at severities 0–5.

    python benchmarks/shifted_suite_figure.py [--out docs/img/shifted-suite.png]

The first test image of CIFAR-10 (table ``cifar10-c``) and of MNIST (``mnist-c``), one row
per family, one column per severity (0 is the clean image).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dawnbench import data
from dawnbench.data.corruptions import FAMILIES, corrupt
from dawnbench.reports.plots import plt

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "shifted-suite.png")
    args = parser.parse_args()
    panels = []
    for dataset in ("cifar10", "mnist"):
        data.ensure(dataset)
        images, _ = data.load_split(dataset, "test")
        panels.append((dataset, images[:1]))
    fig, axes = plt.subplots(len(FAMILIES), 13, figsize=(13, 10.5), dpi=100,
                             gridspec_kw={"width_ratios": [1] * 6 + [0.25] + [1] * 6})
    for row, family in enumerate(FAMILIES):
        for k, (dataset, image) in enumerate(panels):
            for severity in range(6):
                ax = axes[row, severity + 7 * k]
                shown = corrupt(image, family, severity)[0]
                ax.imshow(shown, cmap=None if shown.ndim == 3 else "gray", vmin=0, vmax=255)
                ax.set_xticks([])
                ax.set_yticks([])
                if row == 0:
                    ax.set_title(f"{dataset} {severity}" if severity == 0 else str(severity), fontsize=9)
        axes[row, 0].set_ylabel(family.replace("_", " "), fontsize=9, rotation=0, ha="right", va="center")
        axes[row, 6].axis("off")
    fig.suptitle("The shifted suite: CIFAR-10-C's parameters (left), MNIST-C's (right); severity 0 is the clean image",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"figure: {args.out}")


if __name__ == "__main__":
    main()
