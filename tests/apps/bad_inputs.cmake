# The bad-input catalogue (docs/validation.md, "Bad-input catalogue"): one case per class of input
# that once crashed, hung, overflowed, was accepted although wrong or ended in an unclear message.
# Each asserts the exit code (2 bad input, 1 failed check, 0 for the inputs that are valid but were
# slow) and that the message names the field and the rule; under a sanitizer build run_cli.cmake
# also fails on any sanitizer report. Small inputs live in tests/data/bad_inputs; the large ones
# (deep nesting, 5,000 stages, 20,000 ranks) are written here at configure time.
set(bad ${PROJECT_SOURCE_DIR}/tests/data/bad_inputs)
set(gen ${CMAKE_CURRENT_BINARY_DIR}/bad_inputs)
file(MAKE_DIRECTORY ${gen})
set(sim2 simulate --tp 1 --pp 2 --gpus 2 --schedule 1f1b)
set(sim2_8b ${sim2} --model llama3-8b)
set(run2 run --schedule 1f1b --pp 2 --microbatches 2 --iterations 1 --warmup 0)

# --- finite but absurd GPU specs: refused with their range, not turned into overflowing times ----
cli_test(bad_gpu_peak_1e-300 2 ARGS ${sim2_8b} --gpu ${bad}/gpu_peak_tiny.json
         REGEX "gpu_peak_tiny.json: gpu 'lab-gpu': peak_bf16_tflops=1e-300 must be in \\[0.001, 1e\\+06\\]")
cli_test(bad_gpu_latency_1e300 2 ARGS ${sim2_8b} --gpu ${bad}/gpu_latency_huge.json REGEX "nic_latency_ns=1e\\+300 must be in \\[0, 1e\\+09\\]")
cli_test(bad_gpu_launch_gap_1e18 2 ARGS ${sim2_8b} --gpu ${bad}/gpu_launch_gap_huge.json
         REGEX "kernel_launch_overhead_ns=1e\\+18 must be in \\[0, 1e\\+09\\]")
cli_test(bad_gpu_bandwidth_1e-300 2 ARGS ${sim2_8b} --gpu ${bad}/gpu_bandwidth_tiny.json
         REGEX "nvlink_bandwidth_gbps=1e-300 must be in \\[0.001, 1e\\+06\\]")
cli_test(bad_gpu_efficiency_1e-300 2 ARGS ${sim2_8b} --gpu ${bad}/gpu_efficiency_tiny.json
         REGEX "gemm_efficiency_curve\\[0\\].efficiency=1e-300 must be in \\[0.001, 1\\]")

# --- measured profiles ----------------------------------------------------------------------------
cli_test(bad_profile_time_int64_max 2 ARGS ${run2} --profile ${bad}/profile_time_int64_max.json
         REGEX "profile: per_layer.f_ns=9223372036854775807 must be in \\[0, 10000000000000\\]")
cli_test(bad_profile_flops_1e300 2 ARGS ${run2} --profile ${bad}/profile_flops_1e300.json
         REGEX "flops_per_layer.f=1e\\+300 must be in \\[0, 1e\\+18\\]")
cli_test(bad_profile_flops_negative 2 ARGS ${run2} --profile ${bad}/profile_flops_negative.json
         REGEX "flops_per_layer.i=-5 must be in \\[0, 1e\\+18\\]")

# --- flags: products and ranges checked before anything is multiplied -----------------------------
cli_test(bad_flags_tp_pp_2e20 2 ARGS simulate --model llama3-8b --tp 1048576 --pp 1048576
         REGEX "tp\\*pp\\*cp = 1048576\\*1048576\\*1 exceeds the limit of 1048576")
cli_test(bad_flags_world_2e20 2 ARGS simulate --model llama3-8b --tp 8 --pp 1024 --dp 1024
         REGEX "world size tp\\*pp\\*cp\\*dp = 8\\*1024\\*1\\*1024 exceeds the limit of 1048576")
cli_test(bad_flags_microbatches_2e30 2 ARGS simulate --model llama3-8b --tp 1 --pp 2 --dp 4 --microbatches 1073741824
         REGEX "global batch mbs\\*dp\\*microbatches = 1\\*4\\*1073741824 exceeds the limit of 2147483647")
cli_test(bad_flags_microbatches_actions 2 ARGS simulate --model llama3-8b --tp 1 --pp 2 --gpus 2 --microbatches 1073741824
         REGEX "microbatches=1073741824 has about 6442450944 actions; the limit is 50000000")
cli_test(bad_flags_seq_2e30 2 ARGS ${sim2_8b} --seq 1073741824
         REGEX "the duration of 0F0 on rank 0 exceeds the limit of 100000000000000000 ns")
cli_test(bad_flags_layers_per_virtual_stage_0 2 ARGS simulate --model llama3-8b --tp 1 --pp 4 --gpus 4
         --num-layers-per-virtual-pipeline-stage 0 REGEX "--num-layers-per-virtual-pipeline-stage: Value 0 not in range 1 to")
cli_test(bad_flags_layers_per_virtual_stage_negative 2 ARGS simulate --model llama3-8b --tp 1 --pp 4 --gpus 4
         --num-layers-per-virtual-pipeline-stage -2 REGEX "--num-layers-per-virtual-pipeline-stage: Value -2 not in range 1 to")
cli_test(bad_flags_num_layers_1e9 2 ARGS ${sim2_8b} --num-layers 1000000000
         REGEX "override num_layers=1000000000: model 'llama3-8b': num_layers=1000000000 must be at most 4096")
cli_test(bad_flags_nvfp4_on_hopper 2 ARGS ${sim2_8b} --precision nvfp4
         REGEX "precision=nvfp4 needs FP4 tensor cores \\(Blackwell\\); 'h100-sxm' has peak_fp4_tflops=0")
cli_test(bad_flags_fp4_recipe_custom 2 ARGS ${sim2_8b} --gpu b200 --fp4-format e2m1 --fp4-recipe custom
         REGEX "--fp4-recipe: custom not in \\{nvfp4\\}")
cli_test(bad_flags_fp4_and_fp8_format 2 ARGS ${sim2_8b} --gpu b200 --fp4-format e2m1 --fp8-format hybrid
         REGEX "--fp8-format excludes --fp4-format")
cli_test(bad_flags_fp4_param_gather_in_bf16 2 ARGS ${sim2_8b} --gpu b200 --fp4-param-gather
         REGEX "fp4_param_gather needs precision=nvfp4, got precision=bf16")
cli_test(bad_flags_ep_overlap_allgather 2 ARGS simulate --model qwen3-30b-a3b --tp 1 --pp 1 --ep 8 --gpus 8
         --overlap-moe-expert-parallel-comm REGEX "overlap_moe_expert_parallel_comm needs moe_token_dispatcher_type=alltoall or flex, got allgather")
cli_test(bad_flags_shared_expert_overlap_allgather 2 ARGS simulate --model deepseek-v3 --tp 1 --pp 1 --ep 8 --gpus 8
         --moe-shared-expert-overlap REGEX "moe_shared_expert_overlap needs moe_token_dispatcher_type=alltoall or flex, got allgather")
cli_test(bad_flags_shared_expert_overlap_with_ep_overlap 2 ARGS simulate --model deepseek-v3 --tp 1 --pp 1 --ep 8 --gpus 8
         --moe-token-dispatcher-type alltoall --moe-shared-expert-overlap --overlap-moe-expert-parallel-comm
         REGEX "moe_shared_expert_overlap excludes overlap_moe_expert_parallel_comm")
cli_test(bad_flags_shared_expert_overlap_with_shared_recompute 2 ARGS simulate --model deepseek-v3 --tp 1 --pp 1 --ep 8 --gpus 8
         --moe-token-dispatcher-type alltoall --moe-shared-expert-overlap --recompute selective --recompute-modules shared_experts
         REGEX "moe_shared_expert_overlap excludes \"shared_experts\" in recompute_modules")
cli_test(bad_flags_pad_without_capacity 2 ARGS simulate --model qwen3-30b-a3b --tp 1 --pp 1 --ep 8 --gpus 8
         --moe-token-dispatcher-type alltoall --moe-pad-expert-input-to-capacity
         REGEX "moe_pad_expert_input_to_capacity needs moe_expert_capacity_factor > 0")
cli_test(bad_flags_cross_entropy_impl 2 ARGS ${sim2_8b} --cross-entropy-loss-fusion --cross-entropy-fusion-impl triton
         REGEX "cross_entropy_fusion_impl='triton' must be one of: native, te")
cli_test(bad_flags_ep_overlap_full_recompute 2 ARGS simulate --model qwen3-30b-a3b --tp 1 --pp 1 --ep 8 --gpus 8
         --overlap-moe-expert-parallel-comm --moe-token-dispatcher-type alltoall --recompute full
         REGEX "overlap_moe_expert_parallel_comm excludes recompute=full")

# --- model specs --------------------------------------------------------------------------------------
cli_test(bad_model_hidden_2e31 2 ARGS ${sim2} --model ${bad}/model_hidden_2e31.json REGEX "hidden_size=2147483647 must be at most 131072")
cli_test(bad_model_layers_1e9 2 ARGS ${sim2} --model ${bad}/model_layers_1e9.json
         REGEX "num_layers=1000000000 must be at most 4096" TIMEOUT 20)
cli_test(bad_model_number_1e999 2 ARGS ${sim2} --model ${bad}/model_number_1e999.json
         REGEX "model_number_1e999.json: invalid JSON: number overflow parsing '1e999'")
cli_test(bad_model_name_is_a_number 2 ARGS ${sim2} --model ${bad}/model_name_number.json
         REGEX "model key 'name' must be a string, got integer 42")

# --- JSON nested 10,000 deep: refused before parsing, with its place ---------------------------------
string(REPEAT "[" 10000 open)
string(REPEAT "]" 10000 close)
file(WRITE ${gen}/model_nested_name.json "{\"name\": ${open}${close}, \"num_layers\": 8}\n")
cli_test(bad_model_nested_name 2 ARGS ${sim2} --model ${gen}/model_nested_name.json
         REGEX "invalid JSON: at line 1, column 73: arrays and objects nested deeper than 64 levels")
file(READ ${PROJECT_SOURCE_DIR}/tests/data/apps/slow_profile.json profile_text)
string(REPLACE "\"backend\": \"cpu\"" "\"backend\": ${open}${close}" profile_text "${profile_text}")
file(WRITE ${gen}/profile_nested_backend.json "${profile_text}")
cli_test(bad_profile_nested_backend 2 ARGS ${run2} --profile ${gen}/profile_nested_backend.json
         REGEX "profile_nested_backend.json: invalid JSON: at line [0-9]+, column [0-9]+: arrays and objects nested deeper than 64")
file(READ ${reports_data}/simulate_1f1b_2r_3mb.json result_text)
string(REPLACE "\"schedule\": \"1f1b\"" "\"schedule\": \"1f1b\", \"deep\": ${open}${close}" result_text "${result_text}")
file(WRITE ${gen}/result_nested_config.json "${result_text}")
cli_test(bad_result_nested_config 2 ARGS report ${gen}/result_nested_config.json --out ${tmp}/nested.html
         REGEX "result_nested_config.json: not JSON \\(at line [0-9]+, column [0-9]+: arrays and objects nested deeper than 64")

# --- schedule files -----------------------------------------------------------------------------------
cli_test(bad_schedule_rank_2e32 2 ARGS validate ${bad}/schedule_rank_2e32.json
         REGEX "field \"stage_to_rank\"\\[1\\]=4294967297 must be a rank in \\[0, pp=2\\)")
cli_test(bad_schedule_json_given_as_csv 2 ARGS validate --format csv ${bad}/schedule_json_as_csv.csv
         REGEX "schedule_json_as_csv.csv:1:1: this is JSON, not a PyTorch CSV schedule")
cli_test(bad_schedule_is_a_directory 2 ARGS validate ${bad} REGEX "cannot read schedule file '.*bad_inputs': it is a directory")
# Valid but large: they hung (lock-step replay in steps x ranks); now they validate in bounded time.
set(cells "")
foreach(st RANGE 4999)
  string(APPEND cells "${st}F0,")
endforeach()
foreach(st RANGE 4999 0 -1)
  string(APPEND cells "${st}B0,")
endforeach()
string(REGEX REPLACE ",$" "\n" cells "${cells}")
file(WRITE ${gen}/csv_5000_stages_one_rank.csv "${cells}")
cli_test(csv_5000_stages_on_one_rank 0 ARGS validate ${gen}/csv_5000_stages_one_rank.csv
         REGEX "OK  pp=1 stages=5000 microbatches=1" TIMEOUT 20)
set(rows "")
foreach(r RANGE 19999)
  string(APPEND rows "${r}F0,${r}B0\n")
endforeach()
file(WRITE ${gen}/csv_20000_ranks.csv "${rows}")
cli_test(csv_20000_ranks 0 ARGS validate ${gen}/csv_20000_ranks.csv REGEX "OK  pp=20000 stages=20000 microbatches=1" TIMEOUT 20)

# A failed check (exit 1), not bad input: one microbatch index of 299999 in a 25-byte file breaks
# exactly-once 1.2 million times; the report lists 1000 and counts the rest (fuzz finding: hundreds of MB).
cli_test(failed_check_many_problems 1 ARGS validate ${bad}/schedule_microbatch_299999.csv
         REGEX "INVALID, [0-9]+ problem\\(s\\).*\\[exactly-once\\] rank 0: missing forward 0F1 .*and [0-9]+ more problems \\(the first 1000 are listed\\)"
         TIMEOUT 60)
# Not a regular file: its size is unknown, so reading stops past the 256 MiB limit.
cli_test(bad_schedule_endless_file 2 ARGS validate /dev/zero
         REGEX "schedule file '/dev/zero' holds more than 268435456 bytes; pipelab reads files of at most 268435456 bytes" TIMEOUT 60)

# --- result files (pipelab report) -----------------------------------------------------------------
cli_test(bad_result_time_2e64 2 ARGS report ${bad}/result_time_2e64.json --out ${tmp}/bad.md
         REGEX "timeline\\[0\\]: field \"end_ns\" must be an integer below 2\\^63, got integer 18446744073709551615")
cli_test(bad_result_negative_memory 2 ARGS report ${bad}/result_negative_memory.json --out ${tmp}/bad.md
         REGEX "ranks\\[1\\].peak_memory_bytes: must be in \\[0, 9223372036854775807\\], got -4096")
cli_test(bad_result_rank_2e40 2 ARGS report ${bad}/result_rank_2e40.json --out ${tmp}/bad.md
         REGEX "memory\\[1\\].rank: must be in \\[0, 1048575\\], got 1099511627776")
cli_test(bad_result_flops_1e300 2 ARGS report ${bad}/result_flops_1e300.json --out ${tmp}/bad.md
         REGEX "timeline\\[0\\]: field \"flops\" must be in \\[0, 1e30\\], got 1e\\+300")
cli_test(bad_result_flops_negative 2 ARGS report ${bad}/result_flops_negative.json --out ${tmp}/bad.md
         REGEX "timeline\\[0\\]: field \"flops\" must be in \\[0, 1e30\\], got -8e\\+12")
cli_test(bad_result_kind_is_a_number 2 ARGS report ${bad}/result_kind_number.json --out ${tmp}/bad.md REGEX "kind: must be a string")
# Valid: one event on rank 1,000,000. The ranks without events are drawn as one row (was 265 MB).
cli_test(result_one_event_on_rank_1e6 0 ARGS report ${bad}/result_rank_1e6.json --out ${tmp}/sparse.html
         OUT ${tmp}/sparse.html MAX_BYTES 200000 TIMEOUT 30)

# --- pasted arguments and layouts: the same ranges and products as the flags ----------------------------
cli_test(bad_megatron_args_tp_pp_2e20 2 ARGS simulate --model llama3-8b
         --megatron-args "--tensor-model-parallel-size 1048576 --pipeline-model-parallel-size 1048576"
         REGEX "tp\\*pp\\*cp = 1048576\\*1048576\\*1 exceeds the limit of 1048576")
cli_test(bad_automodel_tp_1e9 2 ARGS simulate --model llama3-8b --automodel-yaml ${bad}/automodel_tp_1e9.yaml
         REGEX "--tp: Value 999999999 not in range 1 to 1048576")
# A model: block without pretrained_model_name_or_path ended in "internal error: invalid node" (fuzz finding).
cli_test(automodel_model_without_id 0 ARGS simulate --model llama3-8b --gpus 4 --automodel-yaml ${bad}/automodel_model_without_id.yaml
         REGEX "tp=2 pp=2")
# A layout of only commas was read as one empty stage (fuzz finding).
cli_test(bad_layout_only_commas 2 ARGS ${sim2_8b} --pipeline-model-parallel-layout ",,"
         REGEX "pipeline_layout ',,', column 1: an empty layout")

# --- the runtime's mock model ---------------------------------------------------------------------------
cli_test(bad_mock_model_larger_than_the_host 2 ARGS ${run2} --hidden 65536 --ffn 262144 --heads 64 --seq 4096 --mbs 16
         REGEX "profile: the mock model needs about [0-9.]+ GiB of host memory .*, more than this machine's [0-9.]+ GiB of physical memory")

# --- formats that cannot carry a schedule ----------------------------------------------------------
cli_test(bad_show_dualpipe_csv 2 ARGS show --schedule dualpipe --pp 4 --microbatches 8 --format csv
         REGEX "dualpipe: a PyTorch CSV schedule has one chain, this one has 2 \\(DualPipe\\); write it as JSON \\(--format json\\)")
cli_test(bad_flags_vp_and_layers_per_virtual_stage 2 ARGS simulate --schedule interleaved-1f1b --num-layers-per-virtual-pipeline-stage 5 --vp 2
         REGEX "--num-layers-per-virtual-pipeline-stage=5 gives vp=4 \\(num_layers/pp = 20 layers per rank\\), but --vp=2; give one of them")
# 0 was the "not given" value of these flags and ran the defaults silently (new-user audit).
cli_test(bad_flags_gbs_0 2 ARGS simulate --gbs 0 REGEX "--gbs: Value 0 not in range 1 to 1073741824")
cli_test(bad_flags_gpus_0 2 ARGS compare --gpus 0 REGEX "--gpus: Value 0 not in range 1 to 1073741824")
cli_test(bad_flags_seq_0 2 ARGS simulate --seq 0 REGEX "--seq: Value 0 not in range 1 to 1073741824")
cli_test(bad_flags_microbatches_0 2 ARGS simulate --microbatches 0 REGEX "--microbatches: Value 0 not in range 1 to 1073741824")
cli_test(bad_flags_plan_seq_0 2 ARGS plan --model llama3-8b --gpus 8 --gbs 32 --seq 0 REGEX "--seq: Value 0 not in range 1 to 1073741824")
cli_test(bad_flags_plan_backend_without_flex 2 ARGS plan --model qwen3-30b-a3b --gpus 16 --gbs 64 --moe-flex-dispatcher-backend hybridep
         REGEX "--moe-flex-dispatcher-backend applies to --moe-token-dispatcher-type flex, got alltoall")
cli_test(bad_flags_plan_ep_overlap_dense 2 ARGS plan --model llama3-8b --gpus 8 --gbs 32 --overlap-moe-expert-parallel-comm
         REGEX "--overlap-moe-expert-parallel-comm needs routed experts; model 'llama3-8b' has none")
cli_test(bad_flags_plan_delay_wgrad_alone 2 ARGS plan --model qwen3-30b-a3b --gpus 16 --gbs 64 --delay-wgrad-compute
         REGEX "--delay-wgrad-compute needs --overlap-moe-expert-parallel-comm \\(Megatron's rule, in every layout\\)")
cli_test(bad_flags_delay_wgrad_alone 2 ARGS ${sim2_8b} --delay-wgrad-compute
         REGEX "delay_wgrad_compute needs overlap_moe_expert_parallel_comm")
