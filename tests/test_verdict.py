"""The verdict (runner/verdict.py): which records may be shown, and why not."""
from runner import verdict
from test_report import CHECKS, record


def test_a_bf16_inference_needs_its_model_in_fp32_and_its_own_features_within_their_bound():
    """A bf16 variant's feature parity is of its model in fp32; without its bf16 features' check
    (a record from before) or with them beyond their bound it is not shown."""
    bf16 = dict(CHECKS["Inference"], bf16_feature_relative_error=0.02, bf16_feature_tolerance=0.2)
    assert verdict.validity(record(task="Inference", variant="bf16", checks=bf16)) == (True, "")
    old = record(task="Inference", variant="bf16", checks=dict(CHECKS["Inference"], feature_max_abs_error=0.2, feature_tolerance=0.5))
    assert verdict.validity(old) == (False, "invalid: no bf16_feature_relative_error check")
    far = record(task="Inference", variant="bf16", checks=dict(bf16, bf16_feature_relative_error=float("nan")))
    assert verdict.validity(far) == (False, "invalid: bf16_feature error nan")
    assert verdict.validity(record(task="Inference", variant="compiled")) == (True, "")


def test_known_photo_misclassified_invalidates_inference():
    bad = record(task="Inference", checks=dict(CHECKS["Inference"], known_photos_correct=False))
    assert verdict.validity(bad)[0] is False
    far = record(task="Inference", checks=dict(CHECKS["Inference"], feature_max_abs_error=0.1))
    assert verdict.validity(far) == (False, "invalid: feature error 0.1")
    assert "no feature_max_abs_error" in verdict.validity(record(task="Inference", checks={"known_photos_correct": True}))[1]
