"""What the dead-code finder cannot see used (``vulture``, run by .ci/run over src/ and benchmarks/ with
pyproject's settings): each name below is reached by a route it does not follow. A name that is truly
unused does not belong here — delete its code instead."""

# entries: found by their registry (dawnbench/entries/__init__.py), by name
SmallCNN, Cifar10Fast, CifarResNet18, ImagenetResnet50, ResNet20, ResNet56, ResNet164  # noqa: B018, F821 - names
SquadBidaf, SquadDrqa, SquadMinilm, MnistStandard, FashionMnistStandard  # noqa: B018, F821 - names, as above
# module __getattr__: Python's own lazy attributes (PEP 562)
__getattr__  # noqa: B018, F821 - a name, as above
# dataclass fields written to result.json and read back by name, in JSON
data_pipeline, entry_facts, started_at, checkpoint, checkpoint_final  # noqa: B018, F821 - names, as above
estimate_bytes, eval_estimate_bytes, share_bytes, per_sample_bytes, probe_batches  # noqa: B018, F821 - names
# attributes another library reads: tarfile's TarInfo, torchrun's parsed arguments, LoadGen's settings
mtime, training_script_args  # noqa: B018, F821 - names, as above
min_duration_ms, single_stream_expected_latency_ns, offline_expected_qps, server_target_qps  # noqa: B018, F821
server_target_latency_ns, min_query_count, outdir, copy_summary_to_stdout  # noqa: B018, F821 - names, as above
# FLOP formulas registered with torch's counter by decorator
_rnn_forward, _rnn_backward  # noqa: B018, F821 - names, as above
# kept for the tests that read them: a LoadGen run's query trace, the IDX writer of generated sets, the event
# log's line parser, the CPU decoder the GPU pipeline is checked against, the check of typed figures
issued, completed, queries, write_idx, parse_line, pillow_decoder, typed_figures  # noqa: B018, F821 - names
# fields of the documents' declarations (TypedDicts of records/): pydantic reads them; the code reads the documents by
# key
a_transposed, b_transposed, bandwidth_bytes_per_s, bytes_per_s, filter_h, filter_w  # noqa: B018, F821 - names, as above
flops_per_s, fraction_of_peak, fraction_of_roof, memory_bound_share  # noqa: B018, F821 - names, as above
op_time_share_of_window, representative_seed, ridge_flop_per_byte, success_fraction  # noqa: B018, F821 - names, as above
successes, time_s, tta_median_s  # noqa: B018, F821 - names, as above
top_ops, provider, region, accelerator_count, vcpus, as_of, not_on_demand  # noqa: B018, F821 - names, as above
interference, entry_file, dirty, priced_as, others_cpu_s, others_share, pricing  # noqa: B018, F821 - names, as above
# the callbacks of dawnbench.integrations: the trainers call their hooks and read the flags they set; users name the
# class; a record's field made by import-log
DawnbenchCallback, on_train_begin, on_step_begin, on_step_end, on_epoch_end, on_evaluate  # noqa: B018, F821 - names
on_train_end, on_train_start, on_train_epoch_start, on_train_epoch_end, on_validation_start  # noqa: B018, F821 - names
on_validation_end, on_exception, should_training_stop, should_stop, imported  # noqa: B018, F821 - names, as above
# a census's memory, declared for the schema that checks it (records/census.py: CensusMemory), read by key
parameters_bytes, gradients_bytes, activations_bytes, activations_fixed_bytes, total_bytes  # noqa: B018, F821 - names, as above
# a target's fields and forms the results templates read (Jinja: docs/results/templates/README.md.j2 and the rest)
wording, stretch, moonshot_text  # noqa: B018, F821 - names, as above
