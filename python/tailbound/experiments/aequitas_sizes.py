"""RPC size models standing for the Aequitas paper's production sizes (Figs. 21 and 22).

Zhang et al., SIGCOMM 2022, run Figs. 21–22 with "RPC sizes taken from production" (Google's,
not published; the authors' artifact reads them from a ``CDF.txt`` its repository does not
hold). What the paper does say of them:

- §2.1, Fig. 1: they are **storage RPC sizes** ("the CDF of storage RPC sizes using response
  payload size for READ RPCs and request payload size for WRITE RPCs"; ~75% of the RPCs are to
  and from storage), shown **normalised** (the absolute scale is not given);
- §6.10: the mean is about **10 MTUs** (normalised SLOs of 25 / 35 µs per MTU "translate to
  250us and 300us deadlines ... based on the average of production RPC-size distribution":
  250 / 25 = 10 MTUs).

The models, by name (:data:`SIZE_MODELS`; ``--sizes`` of ``aequitas_fig21`` and
``aequitas_fig22``), all from real traces in ``../shared/data``:

- ``azure-prompts`` (:data:`AZURE_PROMPTS`): the prompts of both Azure LLM inference traces,
  ``ContextTokens × 4`` bytes (:data:`BYTES_PER_TOKEN`; mean 5.7 KB, 1–12 MTUs, 99th
  percentile 6, 67% within one MTU): the first stand-in, not storage, and a sixth of the
  paper's mean;
- ``storage-10mtu`` (:data:`STORAGE_10MTU`): the request sizes of the MSN File Server
  production trace (``msnfs/MSN-FS-30s-ms.txt``, 150 000 READs and WRITEs, 512 B – 1 MiB,
  mean 17 484 B), **scaled by 50 800 / 17 484 = 2.906** so that the mean is 10 MSS of 5080 B
  (:data:`MEAN_MTUS`): the shape of a storage workload's sizes, as Fig. 1, at the paper's
  mean. In MTUs (``⌈size / MSS⌉``): median 5, 90th percentile 38, 99th 71, 99.9th 291, up to
  600; the largest 10% of the RPCs carry about half of the bytes (a long tail);
- ``azure-prompts-10mtu`` (:data:`AZURE_10MTU`): the Azure prompts scaled by 8.855 to the
  same mean (median 8, 99th percentile 52, at most 98 MTUs: a short tail).

Scaling multiplies every size by ``10 · MSS / mean`` and rounds to whole bytes (at least 1).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from tailbound.errors import ConfigError
from tailbound.experiments.nested_qos_common import find_data
from tailbound.traces.sizes import EmpiricalSizes

SIZE_MODELS = ("azure-prompts", "storage-10mtu", "azure-prompts-10mtu")
AZURE_PROMPTS, STORAGE_10MTU, AZURE_10MTU = SIZE_MODELS
#: The paper's mean RPC size in MTUs (§6.10: a 250 µs deadline over 25 µs per MTU).
MEAN_MTUS = 10
#: Payload of a full packet (MTU 5120 B − 40 B header), bytes.
MSS_BYTES = 5080
BYTES_PER_TOKEN = 4
AZURE_FILES = ("AzureLLMInferenceTrace_code.csv", "AzureLLMInferenceTrace_conv.csv")
MSNFS_FILE = Path("msnfs") / "MSN-FS-30s-ms.txt"


def _distribution(sizes: np.ndarray) -> EmpiricalSizes:
    values, counts = np.unique(np.maximum(sizes, 1), return_counts=True)
    return EmpiricalSizes(values.astype(np.int64), counts.astype(np.float64))


def scaled_to_mean(sizes: EmpiricalSizes, mean_bytes: float) -> EmpiricalSizes:
    """``sizes`` with every value multiplied by ``mean_bytes / sizes.mean_bytes``, rounded to
    whole bytes (≥ 1; the mean then within a byte or so of ``mean_bytes``).

    >>> d = scaled_to_mean(EmpiricalSizes([1000, 3000], [1, 1]), 4000.0)
    >>> d.values.tolist(), d.mean_bytes
    ([2000, 6000], 4000.0)
    """
    if not mean_bytes > 0:
        raise ConfigError(None, f"expected a positive mean, got {mean_bytes}", field="mean_bytes")
    k = mean_bytes / sizes.mean_bytes
    values = np.maximum(np.rint(np.asarray(sizes.values, dtype=np.float64) * k), 1)
    weights = sizes.weights if sizes.weights is not None else np.ones(len(values))
    return EmpiricalSizes(values.astype(np.int64), np.asarray(weights, dtype=np.float64))


@cache
def azure_prompts(data: Path | None = None) -> EmpiricalSizes:
    """Every prompt of both Azure LLM traces, ``ContextTokens × 4`` bytes."""
    from tailbound.traces.native import read_azure_llm_requests

    root = find_data(data) / "azure_llm"
    return _distribution(
        np.concatenate(
            [
                read_azure_llm_requests(root / f, size="context").trace.size * BYTES_PER_TOKEN
                for f in AZURE_FILES
            ]
        )
    )


@cache
def msnfs_requests(data: Path | None = None) -> EmpiricalSizes:
    """The request sizes of the MSN File Server trace (READs and WRITEs), bytes, unscaled."""
    from tailbound.traces.native import read_disksim

    return _distribution(read_disksim(find_data(data) / MSNFS_FILE).size)


def size_model(name: str, data: Path | None = None) -> EmpiricalSizes:
    """The size distribution called ``name`` (:data:`SIZE_MODELS`; module docstring)."""
    target = MEAN_MTUS * MSS_BYTES
    if name == AZURE_PROMPTS:
        return azure_prompts(data)
    if name == STORAGE_10MTU:
        return scaled_to_mean(msnfs_requests(data), target)
    if name == AZURE_10MTU:
        return scaled_to_mean(azure_prompts(data), target)
    raise ConfigError(
        None, f"unknown size model {name!r}: one of {', '.join(SIZE_MODELS)}", field="sizes"
    )
