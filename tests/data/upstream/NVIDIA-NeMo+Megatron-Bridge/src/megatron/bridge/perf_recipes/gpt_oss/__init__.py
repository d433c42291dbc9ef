from megatron.bridge.perf_recipes.gpt_oss.b200.gpt_oss import (
    gpt_oss_120b_pretrain_64gpu_b200_bf16_config,
    gpt_oss_120b_pretrain_64gpu_b200_fp8mx_config,
)
from megatron.bridge.perf_recipes.gpt_oss.b300.gpt_oss import (
    gpt_oss_20b_pretrain_8gpu_b300_fp8mx_config,
    gpt_oss_20b_pretrain_8gpu_b300_nvfp4_config,
    gpt_oss_20b_pretrain_64gpu_b300_fp8mx_config,
    gpt_oss_20b_pretrain_64gpu_b300_nvfp4_config,
    gpt_oss_120b_pretrain_64gpu_b300_bf16_config,
    gpt_oss_120b_pretrain_64gpu_b300_fp8mx_config,
)
from megatron.bridge.perf_recipes.gpt_oss.gb200.gpt_oss import (
    gpt_oss_20b_pretrain_8gpu_gb200_nvfp4_config,
    gpt_oss_20b_pretrain_72gpu_gb200_nvfp4_config,
    gpt_oss_20b_pretrain_512gpu_gb200_fp8mx_config,
    gpt_oss_120b_pretrain_64gpu_gb200_bf16_config,
    gpt_oss_120b_pretrain_64gpu_gb200_bf16_ncclep_config,
    gpt_oss_120b_pretrain_64gpu_gb200_fp8mx_config,
)
from megatron.bridge.perf_recipes.gpt_oss.gb300.gpt_oss import (
    gpt_oss_20b_pretrain_8gpu_gb300_nvfp4_config,
    gpt_oss_20b_pretrain_72gpu_gb300_nvfp4_config,
    gpt_oss_20b_pretrain_512gpu_gb300_fp8mx_config,
    gpt_oss_120b_pretrain_64gpu_gb300_bf16_config,
    gpt_oss_120b_pretrain_64gpu_gb300_fp8mx_config,
)
from megatron.bridge.perf_recipes.gpt_oss.h100.gpt_oss import (
    gpt_oss_120b_pretrain_64gpu_h100_bf16_config,
    gpt_oss_120b_pretrain_64gpu_h100_fp8cs_config,
)
from megatron.bridge.perf_recipes.gpt_oss.vr200.gpt_oss import (
    gpt_oss_20b_pretrain_8gpu_vr200_fp8mx_config,
    gpt_oss_20b_pretrain_8gpu_vr200_nvfp4_config,
    gpt_oss_20b_pretrain_64gpu_vr200_nvfp4_config,
    gpt_oss_120b_pretrain_64gpu_vr200_bf16_config,
    gpt_oss_120b_pretrain_64gpu_vr200_fp8mx_config,
)
