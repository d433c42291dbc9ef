"""A training script as Bridge's tutorials write it: a recipe, then overrides in Python.

    overlap check tests/data/python/llama3_70b_train.py --show-effective
"""

from megatron.bridge.recipes.llama import llama3_70b_pretrain_config
from megatron.bridge.training.comm_overlap import CommOverlapConfig, userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048
from megatron.bridge.training.gpt_step import forward_step
from megatron.bridge.training.pretrain import pretrain

cfg = llama3_70b_pretrain_config()
cfg.model.tensor_model_parallel_size = 4
cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=True)
cfg.comm_overlap.tp_comm_overlap_cfg = userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048
cfg.ddp.overlap_grad_reduce = True

pretrain(cfg, forward_step)
