"""Made-up notebooks for the runner's fault tests: each has a papermill `parameters` cell."""
import nbformat

PARAMETERS = 'profile = "quick"\ndata = "auto"\nrecord_path = "records.jsonl"\n'

WRITE_RECORD = """
from common import probe, records
record = records.make_record(framework="pytorch", task=TASK, profile=profile, data="synthetic",
                             hardware=probe.hardware(), versions={},
                             params={"n_classes": 2}, metrics=METRICS, checks=CHECKS)
records.append_record(record, record_path)
open(records.artifact_path(record_path, "extra.txt"), "w").write("artifact")
"""


# The precision probe's checks a record must carry to count (runner/verdict.py PRECISION_CHECKS).
PRECISION = {"precision_matmul_relative_error": 5e-7, "precision_matmul_tolerance": 1e-5,
             "precision_convolution_relative_error": 5e-7, "precision_convolution_tolerance": 1e-5}
# What an Inference record must carry to count (runner/verdict.py REQUIRED_CHECKS).
INFERENCE_CHECKS = {"feature_max_abs_error": 1e-6, "feature_tolerance": 1e-3, "known_photos_correct": True, **PRECISION}


def write_notebook(path, body, parameters=PARAMETERS):
    notebook = nbformat.v4.new_notebook()
    parameters = nbformat.v4.new_code_cell(parameters)
    parameters.metadata["tags"] = ["parameters"]
    notebook.cells = [parameters, nbformat.v4.new_code_cell(body)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, str(path))


def raising(path):
    write_notebook(path, "x = 1\nprint('about to fail')\n1 / 0\n")


def sleeping(path, seconds=600):
    write_notebook(path, f"import time\ntime.sleep({seconds})\n")


def recording(path, task="Inference"):
    metrics = {"images_per_second": 12.5, "seconds_per_1000_images": 80.0}
    write_notebook(path, f"TASK = {task!r}\nMETRICS = {metrics!r}\nCHECKS = {INFERENCE_CHECKS!r}\n" + WRITE_RECORD)


def sweeping(path):
    """An FCN5 notebook that records the thread count the runner passed it, pinned as harness.start
    would, with the figures and checks an FCN5 cell needs."""
    body = """
from common import probe, records
hardware = dict(probe.hardware(), threads_pinned=threads, threads=threads)
record = records.make_record(framework="pytorch", task="FCN5", profile=profile, data="synthetic",
                             hardware=hardware, versions={}, params={"n_classes": 10, "batch_size": 1024},
                             metrics={"seconds_per_step": 1.0 / threads, "test_accuracy": 0.1,
                                      "epoch_losses": [2.3]},
                             checks={"train_parity_max_abs_error": 1e-6, "train_parity_tolerance": 1e-4,
                                     "train_trajectory_max_abs_error": 1e-5, "train_trajectory_tolerance": 1e-4,
                                     **PRECISION})
records.append_record(record, record_path)
"""
    write_notebook(path, f"PRECISION = {PRECISION!r}\n" + body)


def device_sweeping(path):
    """A MultiGPU notebook that records the devices and pipeline the runner passed it, with the
    figures and checks a MultiGPU cell needs."""
    body = f"PRECISION = {PRECISION!r}\n" + """
from common import probe, records
record = records.make_record(framework="pytorch", task="MultiGPU", profile=profile, data="synthetic",
                             hardware=dict(probe.hardware(), threads_pinned=1, threads=1), versions={},
                             params={"n_classes": 14, "batch_size": 8, "pipeline": pipeline},
                             metrics={"images_per_second": 10.0 / (devices or 2), "devices": devices or 2,
                                      "epoch_losses": [0.5]},
                             checks={"data_parallel_loss_fell": True, **PRECISION} if devices == 1 else {**PRECISION,
                                 "data_parallel_update_relative_error": 1e-6, "data_parallel_update_tolerance": 1e-3,
                                 "data_parallel_loss_fell": True, "data_parallel_replica_relative_error": 0.0,
                                 "data_parallel_replica_tolerance": 1e-6, "data_parallel_replicas": 2,
                                 "data_parallel_replica_devices": 2})
records.append_record(record, record_path)
"""
    write_notebook(path, body, parameters=PARAMETERS + 'devices = 0\npipeline = "ram"\n')
