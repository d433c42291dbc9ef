from megatron.bridge.perf_recipes.deepseek.b200.deepseek_v3 import (
    deepseek_v3_pretrain_256gpu_b200_bf16_config,
    deepseek_v3_pretrain_256gpu_b200_fp8cs_config,
    deepseek_v3_pretrain_256gpu_b200_fp8mx_config,
    deepseek_v3_pretrain_256gpu_b200_fp8mx_large_scale_config,
    deepseek_v3_pretrain_256gpu_b200_nvfp4_config,
)
from megatron.bridge.perf_recipes.deepseek.b200.deepseek_v4 import (
    deepseek_v4_flash_pretrain_128gpu_b200_fp8mx_config,
)
from megatron.bridge.perf_recipes.deepseek.b300.deepseek_v3 import (
    deepseek_v3_pretrain_256gpu_b300_bf16_config,
    deepseek_v3_pretrain_256gpu_b300_fp8cs_config,
    deepseek_v3_pretrain_256gpu_b300_fp8mx_config,
    deepseek_v3_pretrain_256gpu_b300_fp8mx_large_scale_config,
    deepseek_v3_pretrain_256gpu_b300_nvfp4_config,
)
from megatron.bridge.perf_recipes.deepseek.b300.deepseek_v4 import (
    deepseek_v4_flash_pretrain_128gpu_b300_fp8mx_config,
)
from megatron.bridge.perf_recipes.deepseek.gb200.deepseek_v3 import (
    deepseek_v3_pretrain_256gpu_gb200_bf16_config,
    deepseek_v3_pretrain_256gpu_gb200_fp8cs_config,
    deepseek_v3_pretrain_256gpu_gb200_fp8mx_config,
    deepseek_v3_pretrain_256gpu_gb200_fp8mx_large_scale_config,
    deepseek_v3_pretrain_256gpu_gb200_fp8mx_partial_cg_dev_config,
    deepseek_v3_pretrain_256gpu_gb200_nvfp4_config,
)
from megatron.bridge.perf_recipes.deepseek.gb200.deepseek_v4 import (
    deepseek_v4_flash_pretrain_128gpu_gb200_fp8mx_config,
)
from megatron.bridge.perf_recipes.deepseek.gb300.deepseek_v3 import (
    deepseek_v3_pretrain_64gpu_gb300_bf16_fsdp_config,
    deepseek_v3_pretrain_64gpu_gb300_fp8mx_fsdp_config,
    deepseek_v3_pretrain_128gpu_gb300_fp8mx_hsdp_config,
    deepseek_v3_pretrain_256gpu_gb300_bf16_config,
    deepseek_v3_pretrain_256gpu_gb300_fp8cs_config,
    deepseek_v3_pretrain_256gpu_gb300_fp8mx_config,
    deepseek_v3_pretrain_256gpu_gb300_fp8mx_large_scale_config,
    deepseek_v3_pretrain_256gpu_gb300_fp8mx_partial_cg_dev_config,
    deepseek_v3_pretrain_256gpu_gb300_nvfp4_config,
)
from megatron.bridge.perf_recipes.deepseek.gb300.deepseek_v4 import (
    deepseek_v4_flash_pretrain_128gpu_gb300_fp8mx_config,
    deepseek_v4_pro_pretrain_256gpu_gb300_fp8mx_config,
)
from megatron.bridge.perf_recipes.deepseek.h100.deepseek_v3 import (
    deepseek_v3_pretrain_64gpu_h100_bf16_config,
    deepseek_v3_pretrain_64gpu_h100_fp8cs_config,
    deepseek_v3_pretrain_1024gpu_h100_bf16_config,
    deepseek_v3_pretrain_1024gpu_h100_fp8cs_config,
    deepseek_v3_pretrain_1024gpu_h100_fp8sc_config,
    deepseek_v3_pretrain_1024gpu_h100_fp8sc_large_scale_config,
)
from megatron.bridge.perf_recipes.deepseek.vr200.deepseek_v3 import (
    deepseek_v3_pretrain_128gpu_vr200_bf16_config,
    deepseek_v3_pretrain_128gpu_vr200_fp8cs_config,
    deepseek_v3_pretrain_128gpu_vr200_fp8mx_config,
    deepseek_v3_pretrain_128gpu_vr200_nvfp4_config,
    deepseek_v3_pretrain_256gpu_vr200_bf16_config,
    deepseek_v3_pretrain_256gpu_vr200_fp8cs_config,
    deepseek_v3_pretrain_256gpu_vr200_fp8mx_config,
    deepseek_v3_pretrain_256gpu_vr200_nvfp4_config,
)
