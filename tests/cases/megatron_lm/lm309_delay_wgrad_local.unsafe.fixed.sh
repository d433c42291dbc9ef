#!/bin/bash
# Delayed wgrad needs Transformer Engine layers.
# expect: LM309
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --transformer-impl local
