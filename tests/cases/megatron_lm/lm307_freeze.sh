#!/bin/bash
# --freeze-all-layers turns the distributed optimizer and the param-gather overlap off.
# expect: LM307
# absent: LM301
# effective: ddp.use_distributed_optimizer=false@forced-off ddp.overlap_param_gather=false@forced-off
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --freeze-all-layers --use-distributed-optimizer \
    --overlap-grad-reduce --overlap-param-gather
