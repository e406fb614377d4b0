python scripts/performance/setup_experiment.py -g h200 -mr qwen3_vl_30b_a3b -ng 8 -tp 0 -ep 0 -et -0 -mb 0 -pp 0
