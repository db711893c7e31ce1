#!/usr/bin/env bash
# Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/) with pipelab itself: schedule
# JSON and CSV from `pipelab show`, model and GPU specs as shipped, a measured profile from
# `pipelab profile`, results from `simulate` (one of an MoE model, with phases), `compare` and `run`, Megatron layout strings, a
# launch script, AutoModel YAML configs and run tables. Small configurations keep every seed a few
# KB, so libFuzzer's mutations stay fast.
#   fuzz/make_corpus.sh [path/to/pipelab]      (default build/apps/pipelab)
set -euo pipefail
cd "$(dirname "$0")/.."
pipelab="${1:-build/apps/pipelab}"
out=fuzz/corpus
rm -rf "$out"
mkdir -p "$out"/{schedule_json,schedule_csv,model_spec,gpu_spec,profile,pipeline_layout,result,pasted_args,automodel_yaml,run_records}

for s in gpipe 1f1b interleaved-1f1b zb-h1 zb-v dualpipe dualpipev; do
  vp=1
  case "$s" in interleaved-1f1b|zb-v|dualpipe|dualpipev) vp=2 ;; esac
  "$pipelab" show --schedule "$s" --pp 2 --vp "$vp" --microbatches 4 --format json > "$out/schedule_json/$s.json"
  "$pipelab" show --schedule "$s" --pp 2 --vp "$vp" --microbatches 4 --format csv > "$out/schedule_csv/$s.csv"
done
"$pipelab" show --schedule 1f1b --pp 2 --microbatches 2 --format json --lowered > "$out/schedule_json/1f1b-lowered.json"
"$pipelab" show --schedule zb-h1 --pp 2 --microbatches 2 --format csv --lowered > "$out/schedule_csv/zb-h1-lowered.csv"

for m in llama3-8b mixtral-8x7b deepseek-v3 gpt-oss-120b qwen3-30b-a3b; do cp "profiles/models/$m.json" "$out/model_spec/"; done
for g in h100-sxm gb200 a100-80g; do cp "profiles/gpus/$g.json" "$out/gpu_spec/"; done

"$pipelab" profile --backend cpu --hidden 32 --ffn 64 --heads 2 --seq 16 --mbs 1 --layers-per-stage 1 --repeats 2 --warmup 0 \
  --out "$out/profile/cpu.json" > /dev/null

model=(--model llama3-8b --tp 1 --pp 2 --dp 1 --microbatches 2 --num-layers 4)
"$pipelab" simulate "${model[@]}" --schedule 1f1b --json "$out/result/simulate.json" > /dev/null
"$pipelab" compare "${model[@]}" --schedules 1f1b,dualpipe --json "$out/result/compare.json" > /dev/null
# An MoE result carries the phases of its actions and F&B units.
"$pipelab" simulate --model mixtral-8x7b --num-layers 4 --tp 1 --pp 2 --ep 2 --dp 2 --microbatches 4 --schedule dualpipev \
  --moe-token-dispatcher-type alltoall --json "$out/result/simulate_moe.json" > /dev/null
"$pipelab" run --backend cpu --schedule 1f1b --pp 2 --microbatches 2 --iterations 1 --warmup 0 --hidden 32 --ffn 64 --heads 2 \
  --seq 16 --mbs 1 --layers-per-stage 1 --profile "$out/profile/cpu.json" --check-gradients --json "$out/result/run.json" > /dev/null

printf '%s' 'Et|(tt|)*3,m|L' > "$out/pipeline_layout/megatron"
printf '%s' 'Ettt|tttt|tttt|tttL' > "$out/pipeline_layout/plain"
printf '%s' 'E|t*3|(t|)*2tL' > "$out/pipeline_layout/repeats"
cp tests/data/apps/megatron_llama3_70b.sh "$out/pasted_args/llama3_70b.sh"
printf '%s' '--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --num_layers 8 --micro-batch-size 1 --global-batch-size 16' \
  > "$out/pasted_args/short"
# pipelab writes no YAML: the AutoModel seeds are the test config and a pasted distributed: block.
cp tests/data/apps/automodel_llama3_70b.yaml "$out/automodel_yaml/llama3_70b.yaml"
printf '%s\n' 'strategy: megatron_fsdp' 'tp_size: 2' 'pp_size: 2' 'ep_size: 2' 'zero_dp_strategy: 3' 'activation_checkpointing: selective' \
  'pipeline:' '  pp_schedule: 1F1B' '  pp_microbatch_size: 2' > "$out/automodel_yaml/distributed_block.yaml"
# Run tables are measured, not written by pipelab: the calibration set, the held-out tables on other
# GPUs and the test table.
cp calibration/nemo-dgx-h100.csv calibration/nemo-dgx-b200.csv calibration/nemo-dgx-gb200.csv calibration/nemo-dgx-gb300.csv \
  calibration/a100.csv "$out/run_records/"
cp tests/data/apps/calibration_runs.csv "$out/run_records/"
echo "fuzz corpora: $(find "$out" -type f | wc -l) seeds in $out ($(du -sh "$out" | cut -f1))"
