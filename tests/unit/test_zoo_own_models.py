"""A user's own model folder beside the zoo: the tokenizer it falls back to (the zoo's, only at the zoo's vocabulary),
a pair whose vocabularies differ, and requests the zoo cannot serve, each refused with what to do."""
import pytest

from specedge import zoo

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def bare_draft(tmp_path_factory):
    """draft-xs saved without tokenizer files: what a bare ``save_pretrained`` of a model leaves."""
    where = tmp_path_factory.mktemp("mine") / "draft"
    zoo.load_model("draft-xs").save_pretrained(where)
    return where


def test_a_bare_model_folder_at_the_zoo_vocabulary_gets_the_zoo_tokenizer(bare_draft):
    assert zoo.resolve(bare_draft) == ("local", bare_draft)
    tok = zoo.tokenizer_for(bare_draft)
    assert len(tok) == len(zoo.load_tokenizer()) and tok("def f")["input_ids"] == zoo.load_tokenizer()("def f")["input_ids"]
    assert len(zoo.tokenizer_for("draft-xs")) == len(tok)


def test_a_bare_model_folder_with_another_vocabulary_is_refused_naming_the_fix(bare_draft):
    with pytest.raises(FileNotFoundError, match="no tokenizer files.*its vocabulary \\(123\\) is not the zoo.*"
                                                "tokenizer.save_pretrained"):
        zoo.tokenizer_for(bare_draft, vocab_size=123)


def test_a_pair_must_share_a_vocabulary(bare_draft, tmp_path):
    d, t, tok = zoo.load_pair(str(bare_draft), "target-m")
    assert d.config.vocab_size == t.config.vocab_size == len(tok)
    other = zoo.load_model("draft-xs")
    other.resize_token_embeddings(other.config.vocab_size + 8)
    other.save_pretrained(tmp_path / "wide")
    with pytest.raises(ValueError, match="must share a vocabulary"):
        zoo.load_pair(str(tmp_path / "wide"), "target-m")


def test_requests_the_zoo_cannot_serve_say_so():
    with pytest.raises(ValueError, match="n must be >= 0"):
        zoo.eval_records("code", -1)
    assert zoo.eval_records("code", 0) == [] and len(zoo.eval_prompts("code", 2)) == 2
    with pytest.raises(ValueError, match="no model card for 'org/unknown-model'; zoo models: "):
        zoo.model_card("org/unknown-model")
