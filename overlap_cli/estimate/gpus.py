"""Per-GPU hardware figures the step-time model reads, each with where it comes from.

Peak numbers are *dense* (no 2:4 sparsity) Tensor Core TFLOP/s; vendor sheets quote the sparse figure and
say the dense one is half of it. ``fp8`` also covers MXFP8 / FP8 block scaling (the same Tensor Core
rate); ``fp4`` is NVFP4. Bandwidths are GB/s per GPU in one direction: ``nvlink`` is the NVSwitch
GPU-to-GPU bandwidth (vendor "bidirectional" figures halved), ``network`` the scale-out (InfiniBand /
RoCE) bandwidth of the NIC each GPU owns in the vendor's reference system (rail-optimised, one NIC per
GPU). ``nvlink_domain`` is how many GPUs one NVLink fabric joins in that reference system; ``sms`` the
streaming multiprocessors (the LayerNorm SM margins and userbuffers take SMs out of this count).

Where a figure is not on a vendor sheet the ``assumed`` list says so. Rubin parts (vr200, r100) are not
modelled: no dense peak or bandwidth figure for them is published in a form this table could cite.
"""

from __future__ import annotations

# Source keys, cited once.
SOURCES = {
    "a100-datasheet": "NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): BF16 312 TFLOPS dense (624 sparse), 80 GB HBM2e 2,039 GB/s, NVLink 600 GB/s; as tabulated at https://glennklockwood.com/garden/processors/A100",
    "a100-dgx": "NVIDIA DGX A100 (Selene) as used by Narayanan et al. 2021, Sec. 5: 8 GPUs per node on NVSwitch, 8 x 200 Gb/s HDR InfiniBand per node (one per GPU)",
    "h100-peak": "shared reference gpu_peak_tflops.json: H100 SXM5 BF16 989.4 / FP8 1978.9 dense (NVIDIA H100 datasheet, sparse figures halved)",
    "h100-datasheet": "NVIDIA H100 Tensor Core GPU datasheet: SXM5 HBM3 3.35 TB/s, NVLink 900 GB/s (bidirectional); DGX H100: 8 GPUs per NVSwitch domain, 8 x ConnectX-7 400 Gb/s (one per GPU)",
    "h200-datasheet": "NVIDIA H200 Tensor Core GPU datasheet: same Tensor Core peaks as H100 SXM, HBM3e 4.8 TB/s, NVLink 900 GB/s; HGX H200 8 GPUs, ConnectX-7 400 Gb/s per GPU",
    "b200-peak": "shared reference gpu_peak_tflops.json: HGX/DGX B200 (1,000 W) BF16 2250 / FP8 4500 dense; https://glennklockwood.com/garden/processors/B200 (FP4 9000 dense)",
    "gb200-peak": "shared reference gpu_peak_tflops.json: B200 in GB200 NVL72 (1,200 W) BF16 2500 / FP8 5000 dense; FP4 10000 dense (NVIDIA GB200 NVL72 datasheet, 20 PFLOPS sparse per GPU)",
    "b300-peak": "shared reference gpu_peak_tflops.json: HGX B300 BF16 2250 / FP8 4500 dense; FP4 dense ~13,125-14,000 (https://glennklockwood.com/garden/processors/B300; https://verda.com/blog/gb300-nvl72-architecture), 13500 used",
    "gb300-peak": "shared reference gpu_peak_tflops.json: GB300 NVL72 BF16 2500 / FP8 5000 dense; FP4 15000 dense (https://verda.com/blog/gb300-nvl72-architecture; 1.08 EF dense FP4 over 72 GPUs)",
    "blackwell-memory-nvlink": "NVIDIA HGX B200/B300 and GB200/GB300 NVL72 datasheets: HBM3e up to 8 TB/s per GPU, NVLink 5 1.8 TB/s per GPU (bidirectional, 900 GB/s each way); verda.com lists 7.7 TB/s for B200/GB200/B300",
    "b200-network": "NVIDIA DGX B200: 8 x ConnectX-7 400 Gb/s, one per GPU (HGX B200 networking 0.8 TB/s per 8 GPUs, https://fibermall.com/blog/?p=17161)",
    "b300-network": "NVIDIA HGX B300: ConnectX-8 800 Gb/s per GPU (networking 1.6 TB/s per 8 GPUs, https://fibermall.com/blog/?p=17161; https://acecloud.ai/blog/nvidia-hgx-b300)",
    "gb200-nvl72": "NVIDIA GB200 NVL72: one NVLink domain of 72 GPUs; compute trays with one ConnectX-7 400 Gb/s per GPU",
    "gb300-nvl72": "NVIDIA GB300 NVL72: one NVLink domain of 72 GPUs, 72 ConnectX-8 800 Gb/s NICs (https://glennklockwood.com/garden/processors/B300)",
    "hbm-capacity": "HBM capacity per GPU from the vendor sheets: A100 80 GB, H100 SXM5 80 GB, H200 141 GB, DGX B200 1,440 GB / 8 GPUs = 180 GB, "
                    "HGX B300 2.3 TB / 8 = 288 GB, GB200 NVL72 13.4 TB / 72 = 186 GB, GB300 NVL72 up to 20.7 TB / 72 = 288 GB (HBM sizes are "
                    "binary: an H100's 80 GB shows as 81,559 MiB in nvidia-smi; taken here as GiB)",
    "sm-counts": "SM counts: A100 108 (A100 whitepaper), H100/H200 SXM 132 (H100 whitepaper), B200 148 (Blackwell whitepaper); B300 160 (Blackwell Ultra announcement)",
}

# name -> figures. "peak" in TFLOP/s; "hbm", "nvlink", "network" in GB/s per GPU (one direction).
GPUS = {
    "a100": {
        "part": "A100 SXM4 80 GB (DGX A100)",
        "peak": {"bf16": 312.0},
        "hbm": 2039.0, "nvlink": 300.0, "nvlink_domain": 8, "network": 25.0, "sms": 108, "memory_gib": 80,
        "sources": ["hbm-capacity", "a100-datasheet", "a100-dgx", "sm-counts"],
        "assumed": ["no FP8 Tensor Cores: an FP8 config on A100 is estimated at the BF16 rate"],
    },
    "h100": {
        "part": "H100 SXM5 (DGX H100)",
        "peak": {"bf16": 989.4, "fp8": 1978.9},
        "hbm": 3350.0, "nvlink": 450.0, "nvlink_domain": 8, "network": 50.0, "sms": 132, "memory_gib": 80,
        "sources": ["hbm-capacity", "h100-peak", "h100-datasheet", "sm-counts"],
        "assumed": ["no FP4 Tensor Cores: NVFP4 is estimated at the FP8 rate"],
    },
    "h200": {
        "part": "H200 SXM (HGX H200)",
        "peak": {"bf16": 989.4, "fp8": 1978.9},
        "hbm": 4800.0, "nvlink": 450.0, "nvlink_domain": 8, "network": 50.0, "sms": 132, "memory_gib": 141,
        "sources": ["hbm-capacity", "h100-peak", "h200-datasheet", "sm-counts"],
        "assumed": ["no FP4 Tensor Cores: NVFP4 is estimated at the FP8 rate",
                    "no measured H200 row: achieved efficiency taken from H100 (same SMs and Tensor Cores)"],
    },
    "b200": {
        "part": "B200 (HGX/DGX B200, 1,000 W)",
        "peak": {"bf16": 2250.0, "fp8": 4500.0, "fp4": 9000.0},
        "hbm": 8000.0, "nvlink": 900.0, "nvlink_domain": 8, "network": 50.0, "sms": 148, "memory_gib": 180,
        "sources": ["hbm-capacity", "b200-peak", "blackwell-memory-nvlink", "b200-network", "sm-counts"],
        "assumed": [],
    },
    "b300": {
        "part": "B300 (HGX/DGX B300)",
        "peak": {"bf16": 2250.0, "fp8": 4500.0, "fp4": 13500.0},
        "hbm": 8000.0, "nvlink": 900.0, "nvlink_domain": 8, "network": 100.0, "sms": 160, "memory_gib": 288,
        "sources": ["hbm-capacity", "b300-peak", "blackwell-memory-nvlink", "b300-network", "sm-counts"],
        "assumed": ["FP4 dense peak: secondary sources disagree (13.1-14 PFLOPS); 13.5 PFLOPS used"],
    },
    "gb200": {
        "part": "B200 in GB200 NVL72 (1,200 W)",
        "peak": {"bf16": 2500.0, "fp8": 5000.0, "fp4": 10000.0},
        "hbm": 8000.0, "nvlink": 900.0, "nvlink_domain": 72, "network": 50.0, "sms": 148, "memory_gib": 186,
        "sources": ["hbm-capacity", "gb200-peak", "blackwell-memory-nvlink", "gb200-nvl72", "sm-counts"],
        "assumed": ["a parallel group is inside one NVLink domain only up to 64 GPUs (the largest power of two "
                    "in 72: Megatron's groups are contiguous rank ranges of power-of-two sizes)"],
    },
    "gb300": {
        "part": "B300 in GB300 NVL72 (1,400 W)",
        "peak": {"bf16": 2500.0, "fp8": 5000.0, "fp4": 15000.0},
        "hbm": 8000.0, "nvlink": 900.0, "nvlink_domain": 72, "network": 100.0, "sms": 160, "memory_gib": 288,
        "sources": ["hbm-capacity", "gb300-peak", "blackwell-memory-nvlink", "gb300-nvl72", "sm-counts"],
        "assumed": ["a parallel group is inside one NVLink domain only up to 64 GPUs (see gb200)"],
    },
}

# GPUs the target flags accept that the model has no figures for.
NOT_MODELLED = {
    "vr200": "Vera Rubin (vr200) has no published dense Tensor Core peak or bandwidth figures this model could cite",
    "r100": "Rubin (r100) has no published dense Tensor Core peak or bandwidth figures this model could cite",
}

# Figures every GPU shares, each an assumption (no vendor sheet states them).
# Achieved bus bandwidth of NCCL collectives as a fraction of the link rate, and the fixed cost of
# launching one collective: typical nccl-tests results on these systems, not a datasheet figure.
LINK_EFFICIENCY = {"nvlink": 0.80, "network": 0.85}
COLLECTIVE_LATENCY_S = {"nvlink": 15e-6, "network": 30e-6}


def peak_tflops(gpu: dict, precision: str) -> float:
    """Dense peak for ``precision`` (bf16 | fp8 | fp4), falling back to the next wider format the GPU has."""
    peak = gpu["peak"]
    for p in {"fp4": ("fp4", "fp8", "bf16"), "fp8": ("fp8", "bf16"), "bf16": ("bf16",)}[precision]:
        if p in peak:
            return peak[p]
    return peak["bf16"]
