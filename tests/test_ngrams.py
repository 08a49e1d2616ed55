"""GPT's n-gram baselines (common.ngrams): add-one smoothed counts of the training text, scored on
the validation text, computed as written out by hand, cached, and shown beside the GPT table."""
import math

import numpy as np
import pytest

from common import ngrams
from runner import report
from test_report import record


def test_each_order_is_the_smoothed_count_written_out():
    train, valid = np.array([0, 1, 0, 1, 0, 2]), np.array([0, 1, 2])
    # Unigram: counts 3, 2, 1 of 6, plus one each over a vocabulary of 3.
    unigram = [(3 + 1) / 9, (2 + 1) / 9, (1 + 1) / 9]
    assert math.isclose(ngrams.ngram_loss(train, valid, 3, 1), -np.mean(np.log(unigram)))
    # Bigram: after 0 came 1 twice and 2 once (3 times in all); after 1 came 0 twice, never 2.
    bigram = [(2 + 1) / (3 + 3), (0 + 1) / (2 + 3)]
    assert math.isclose(ngrams.ngram_loss(train, valid, 3, 2), -np.mean(np.log(bigram)))
    # Trigram: (0, 1) was followed by 0 twice, never by 2.
    assert math.isclose(ngrams.ngram_loss(train, valid, 3, 3), -np.log((0 + 1) / (2 + 3)))
    with pytest.raises(ValueError, match="past the vocabulary"):
        ngrams.ngram_loss(train, valid, 2, 1)
    with pytest.raises(ValueError, match="too short"):
        ngrams.ngram_loss(train, valid[:2], 3, 3)


def test_a_text_that_repeats_is_predicted_better_the_longer_the_context(tmp_path, monkeypatch):
    monkeypatch.setenv("ROSETTA_CACHE", str(tmp_path))
    # After 0 comes 1 or 2: one character before leaves a choice that two characters settle.
    text = np.tile([0, 1, 0, 2, 3], 600)
    found = ngrams.baselines(text[:2000], text[2000:], 20)
    assert list(found) == ["unigram", "bigram", "trigram"]
    assert found["unigram"] > found["bigram"] > found["trigram"] + 0.2 and found["trigram"] < 0.1
    assert list((tmp_path / "data" / "ngrams").glob("baselines-*.json"))  # kept, and read back the same
    assert ngrams.baselines(text[:2000], text[2000:], 20) == found


def test_the_gpt_table_states_the_baselines_of_its_newest_record():
    gpt = record(task="GPT", metrics={"tokens_per_second": 900.0, "validation_loss": 2.3,
                                      "baseline_losses": {"bigram": 2.492, "trigram": 2.019, "unigram": 3.098}})
    text = report.baselines_text({("PyTorch", "column"): gpt})
    assert "unigram 3.10, bigram 2.49, trigram 2.02" in text and "add-one" in text
    assert report.baselines_text({("PyTorch", "column"): record(task="GPT")}) == ""
