"""Saving matplotlib figures: written all or nothing (:mod:`tailbound.atomic`), then closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tailbound.atomic import atomic_path


def save_figure(fig: Any, path: str | Path, **savefig: Any) -> Path:
    """Save ``fig`` to ``path`` atomically (``savefig`` keywords passed on, e.g. ``dpi``) and
    close it: a figure is done once saved, and pyplot would otherwise keep it alive."""
    import matplotlib.pyplot as plt

    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, **savefig)
    finally:
        plt.close(fig)
    return Path(path)
