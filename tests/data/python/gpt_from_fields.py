"""A Bridge run whose config is written field by field, as Bridge's vanilla_gpt / wan recipes write theirs."""

from megatron.core.distributed import DistributedDataParallelConfig

from megatron.bridge.models.gpt_provider import GPTModelProvider
from megatron.bridge.training.comm_overlap import CommOverlapConfig
from megatron.bridge.training.config import (
    CheckpointConfig,
    ConfigContainer,
    GPTDatasetConfig,
    LoggerConfig,
    OptimizerConfig,
    SchedulerConfig,
    TokenizerConfig,
    TrainingConfig,
)
from megatron.bridge.training.gpt_step import forward_step
from megatron.bridge.training.mixed_precision import bf16_mixed
from megatron.bridge.training.pretrain import pretrain

SEQ = 4096


def adam(lr: float = 3e-4):
    optimizer = OptimizerConfig(optimizer="adam", lr=lr, bf16=True, use_distributed_optimizer=True)
    scheduler = SchedulerConfig(lr_warmup_iters=100)
    return optimizer, scheduler


model = GPTModelProvider(
    num_layers=32,
    hidden_size=4096,
    num_attention_heads=32,
    seq_length=SEQ,
    tensor_model_parallel_size=4,
    sequence_parallel=True,
)
ddp = DistributedDataParallelConfig(use_distributed_optimizer=True, grad_reduce_in_fp32=True)
ddp.overlap_grad_reduce = True
opt, sched = adam()

cfg = ConfigContainer(
    model=model,
    train=TrainingConfig(global_batch_size=256, micro_batch_size=1, train_iters=1000),
    optimizer=opt,
    scheduler=sched,
    ddp=ddp,
    dataset=GPTDatasetConfig(random_seed=1234, seq_length=SEQ, blend=None, split="99,1,0", reset_position_ids=False,
                             reset_attention_mask=False, eod_mask_loss=False),
    logger=LoggerConfig(log_interval=10),
    tokenizer=TokenizerConfig(tokenizer_type="NullTokenizer", vocab_size=32000),
    checkpoint=CheckpointConfig(save_interval=500),
    comm_overlap=CommOverlapConfig(tp_comm_overlap=False),
    mixed_precision=bf16_mixed(),
    env_vars={"CUDA_DEVICE_MAX_CONNECTIONS": 1},
)
cfg.ddp.bucket_size = 40000000

pretrain(cfg, forward_step)
