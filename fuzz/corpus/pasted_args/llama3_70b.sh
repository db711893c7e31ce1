#!/bin/bash
GPT_MODEL_ARGS=(
    --num-layers 80          # Llama-3 70B
    --hidden-size 8192
    --ffn-hidden-size 28672
    --num-attention-heads 64
    --group-query-attention --num-query-groups 8
    --seq-length 8192 --max-position-embeddings 8192
    --normalization RMSNorm --swiglu --disable-bias-linear
    --position-embedding-type rope
)
torchrun --nproc_per_node 8 --nnodes $NNODES pretrain_gpt.py \
    --tensor-model-parallel-size 4 --pipeline_model_parallel_size 8 \
    --num-layers-per-virtual-pipeline-stage 2 \
    --micro-batch-size 1 --global-batch-size 128 --bf16 \
    --lr 1.5e-4 --data-path $DATA_PATH --use-distributed-optimizer \
    --recompute-modules core_attn mlp --recompute-granularity selective \
    --overlap-grad-reduce --overlap-param-gather --tp 2  # a repeat: the later value wins in argparse
