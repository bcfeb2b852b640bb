"""The lesson's fixed material in both languages: pages, the paper's settings, errata, glossary, exercises.

Prose lives in templates/lesson/<lang>/; what several pages or the tests share lives here. Each text is written
in English and marked for gettext (read when shown); its Chinese is in webapp/lesson/locale/. The glossary's terms
are the exception: a page shows both languages' terms side by side.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.safestring import mark_safe
from django.utils.translation import get_language, gettext
from django.utils.translation import gettext_lazy as _

PAGES = ("overview", "encoder", "decoder", "residual-norm", "questions", "glossary")
PAGE_TITLES = {
    "overview": _("Overview: the encoder-decoder"),
    "encoder": _("The encoder: reading the input"),
    "decoder": _("The decoder: writing the output"),
    "residual-norm": _("Residual connections and layer normalisation"),
    "questions": _("Questions and answers"),
    "glossary": _("Glossary"),
}


def lang() -> str:
    """'zh' or 'en': the reader's language, for what each language writes its own way (a page's prose, a count)."""
    return "zh" if (get_language() or "en").startswith("zh") else "en"


# The paper's base model (Vaswani et al. 2017, table 3 and section 5) beside what ships here.
PAPER = {"layers": 6, "d_model": 512, "n_heads": 8, "d_ff": 2048, "dropout": 0.1, "label_smoothing": 0.1,
         "warmup_steps": 4000, "adam_beta2": 0.98}


PAPER_PARAMETERS = 65_000_000  # the base model's count in the paper's Table 3
PAPER_VOCAB = 37_000  # its shared source-target vocabulary of byte-pair tokens (WMT 2014 English-German, section 5.1)


def parameter_count(config: dict[str, Any]) -> int:
    """The trainable parameters of modelcore's EncoderDecoder with this config, each shared matrix counted once.

    Arithmetic on the sizes, so that the web process can tell without building the model (it loads no torch).
    """
    d, d_ff, norm = config["d_model"], config["d_ff"], config.get("norm", "layernorm")
    norm_size = d if norm == "rmsnorm" else 2 * d  # gain, and LayerNorm's bias
    attention = 4 * (d * d + d)  # q, k, v and output projections with their biases
    ffn = d * d_ff + d_ff + d_ff * d + d
    encoder = config["n_encoder_layers"] * (attention + ffn + 2 * norm_size)
    decoder = config["n_decoder_layers"] * (2 * attention + ffn + 3 * norm_size)
    final_norms = 2 * norm_size if config.get("norm_position", "post") == "pre" else 0
    src, tgt = config["src_vocab_size"] * d, config["tgt_vocab_size"] * d
    generator = tgt + config["tgt_vocab_size"]  # its bias is never shared
    if config.get("tie_embeddings"):
        generator -= tgt
    if config.get("share_embeddings"):
        src = 0
    return encoder + decoder + final_norms + src + tgt + generator


def paper_parameters() -> list[dict[str, Any]]:
    """The paper's base sizes with its shared vocabulary, untied, with the output tied, and with all three tied."""
    base = {"src_vocab_size": PAPER_VOCAB, "tgt_vocab_size": PAPER_VOCAB, "d_model": PAPER["d_model"],
            "n_heads": PAPER["n_heads"], "d_ff": PAPER["d_ff"], "n_encoder_layers": PAPER["layers"],
            "n_decoder_layers": PAPER["layers"]}
    ties = {"none": {}, "output": {"tie_embeddings": True},
            "all": {"tie_embeddings": True, "share_embeddings": True}}
    return [{"tying": name, "parameters": parameter_count({**base, **extra})} for name, extra in ties.items()]


def count_text(n: int) -> str:
    """A parameter count as each language writes it: 1.08 M, 101.0 M; 107.6 万, 1.01 亿."""
    if lang() == "zh":
        return f"{n / 1e8:.2f} 亿" if n >= 1e8 else f"{n / 1e4:.0f} 万" if n >= 1e7 else f"{n / 1e4:.1f} 万"
    return f"{n / 1e6:.1f} M" if n >= 1e7 else f"{n / 1e6:.2f} M"


def vocabulary_share() -> dict[str, Any]:
    """One vocabulary matrix of the paper's sizes, its share of the untied total, and the three matrices together."""
    matrix = PAPER_VOCAB * PAPER["d_model"]
    untied = next(row["parameters"] for row in paper_parameters() if row["tying"] == "none")
    return {"paper_matrix": count_text(matrix), "paper_matrix_share": round(100 * matrix / untied),
            "paper_matrices": count_text(3 * matrix), "paper_untied": count_text(untied)}


TYING = {
    "none": _("the paper's sizes, a shared 37,000-token vocabulary, untied"),
    "output": _("the same, the decoder's embedding tied with the output layer (tie_embeddings)"),
    "all": _("the same, all three tied: the encoder's embedding shared too (share_embeddings as well), as in the paper"),
}


def parameter_rows(shipped: list[tuple[str, dict[str, Any]]]) -> list[dict[str, str]]:
    """The overview's parameter table: the paper's count, its sizes under each tying, then each shipped model."""
    rows = [{"label": gettext("the paper's base model (its Table 3)"),
             "count": count_text(PAPER_PARAMETERS), "testid": "paper"}]
    rows += [{"label": str(TYING[row["tying"]]), "count": count_text(row["parameters"]), "testid": f"tying-{row['tying']}"}
             for row in paper_parameters()]
    rows += [{"label": name, "count": count_text(parameter_count(config)), "testid": f"model-{name}"}
             for name, config in shipped]
    return rows


@dataclass(frozen=True)
class Erratum:
    """A sentence of the lesson that is wrong: quoted as written, then corrected."""

    id: str
    page: str
    quote: str  # the lesson's own words, exactly
    quote_en: str  # what they say, in English
    correction: Any  # a lazy translation: the reader's language when read
    evidence: str = ""  # a partial (templates/lesson/partials/) that shows the measured figures beside the correction

    def text(self) -> dict[str, str]:
        # The corrections are this module's own texts: they may mark an English word of a Chinese reading (the
        # toy's "cat") with <span lang="en">, so that it is read, and left untranslated, as English.
        return {"id": self.id, "quote": self.quote, "quote_en": self.quote_en,
                "correction": mark_safe(str(self.correction)), "evidence": self.evidence}


ERRATA = {e.id: e for e in (
    Erratum("a", "residual-norm",
            "原始Transformer使用的是Post-LN（x + Sublayer(LN(x))），但后来发现Pre-LN（LN(x + Sublayer(x))）训练更稳定",
            "The original Transformer used Post-LN (x + Sublayer(LN(x))), but later Pre-LN (LN(x + Sublayer(x))) "
            "was found to train more stably",
            _("The two formulas are swapped. Post-LN (the 2017 paper) adds the residual first and normalises "
              "the sum: x = LN(x + Sublayer(x)). Pre-LN normalises the sublayer's input and adds the residual "
              "after: x = x + Sublayer(LN(x)), with one more LN after the last layer of the stack. That Pre-LN "
              "trains more stably is right.")),
    Erratum("b", "residual-norm",
            "另外，LayerNorm在推理时如果batch size很小，统计量不稳定，通常使用训练时累积的移动平均。",
            "Also, at inference with a small batch size LayerNorm's statistics are unstable, so it usually uses "
            "moving averages accumulated during training.",
            _("LayerNorm keeps no running statistics. It takes the mean and variance over each position's own "
              "d_model features, in training and at inference alike, so the batch size does not matter; its "
              "only parameters are the gain γ and the bias β. Moving averages from training are BatchNorm's.")),
    Erratum("c", "questions",
            "②推理时batch size可能很小（如batch=1），统计量不稳定。",
            "② at inference the batch size may be small (e.g. batch=1), so the statistics are unstable.",
            _("This mixes training and inference. At inference BatchNorm uses the running averages gathered in "
              "training, so batch=1 needs no statistics of its own. Its real trouble in NLP is in training: its "
              "statistics span the batch, take in padding positions and change with whichever sentences happen "
              "to share the batch; the running averages used later then differ from what each batch saw.")),
    Erratum("d", "questions",
            "这种\"先扩大再缩小\"的设计（bottleneck结构）提供了更大的表示容量",
            "This \"widen, then narrow\" design (a bottleneck structure) gives more representational capacity",
            _("A bottleneck narrows and then widens. The FFN goes from d_model up to d_ff = 4·d_model and back, "
              "widest in the middle: an inverted bottleneck. What the width buys is more parameters and more "
              "independent units after the ReLU.")),
    Erratum("e", "residual-norm",
            "无残差连接时，每层输出与原始输入的距离越来越大",
            "Without residual connections, each layer's output moves further and further from the original input",
            _("That is what the NumPy toy printed, not what the trained models do. Remove their residuals and "
              "the distance from the input does not grow steadily on any of them; how it moves depends on the "
              "model (on 我的猫追了一只老鼠。: zh-en-post 14.8, 15.0, 13.5 by layer, level after a jump at the "
              "first; zh-en-hsk 24.3, 20.7, 139.4, a leap at the last). What happens on all three is that the "
              "positions move towards one another: their spread, how far they lie from their mean against how "
              "long they are, falls layer after layer (zh-en-post 0.82, 0.66, 0.54; zh-en-pre 0.86, 0.73, 0.23; "
              "zh-en-hsk 0.68, 0.28, 0.06), while with the residuals it stays about level. The positions become "
              "harder to tell apart and the sentence is blurred. The demonstration below gives each layer's "
              "numbers on the model you pick.")),
    Erratum("f", "decoder",
            "生成'cat'时，交叉注意力高度关注编码器的'猫'",
            "When generating 'cat', cross-attention focuses strongly on the encoder's '猫'",
            _("The toy's weights are random and never trained, so its attention has learned nothing to align. "
              "Run as printed, the row it labels <span lang=\"en\">“cat”</span> gives 猫, 追 and 老鼠 almost the "
              "same weight, and the most to 老鼠. That row is also not the one that writes <span lang=\"en\">“cat”"
              "</span>: its input is <span lang=\"en\">“cat”</span>, so it predicts the word after it; "
              "<span lang=\"en\">“cat”</span> is written by the row before, whose input is <span lang=\"en\">“The”"
              "</span>. Alignment "
              "is learned in training, and a trained model shows it: in the table, the shipped zh-en-post "
              "translates the toy's sentence, and in its last decoder layer the row that writes each English "
              "word puts most of its weight on the Chinese word it translates. The demonstration below shows "
              "any sentence's rows, layer by layer and head by head."),
            evidence="erratum_alignment.html"),
)}

# Erratum f's evidence. The lesson's decoder toy as printed (NumPy, seed 123, random weights): its cross-attention row
# labelled "cat" over 猫, 追, 老鼠. Fixed: the lesson's code does not change.
TOY_CAT_ROW = (("猫", 0.337), ("追", 0.326), ("老鼠", 0.338))
# The trained model on the toy's sentence: its greedy output read back in one teacher-forced pass, the last decoder
# layer's cross-attention averaged over the heads; each row (what it reads, what it writes, its weight on each source
# token). tests/webapp/lesson/test_quoted_figures.py computes it again from the shipped model.
ALIGNMENT = {
    "model": "zh-en-post", "sentence": "猫追老鼠。", "layer": 3, "heads": 4,
    "source": ("猫", "追", "老", "鼠", "。", "<eos>"),
    "rows": (("<bos>", "cats", (0.93, 0.01, 0.00, 0.02, 0.01, 0.04)),
             ("cats", "chase", (0.00, 1.00, 0.00, 0.00, 0.00, 0.00)),
             ("chase", "mice", (0.29, 0.00, 0.06, 0.65, 0.00, 0.00)),
             ("mice", ".", (0.00, 0.00, 0.00, 0.00, 0.72, 0.28)),
             (".", "<eos>", (0.02, 0.01, 0.02, 0.01, 0.48, 0.47))),
}


def alignment() -> dict[str, Any]:
    """Erratum f's table: the toy's row beside the trained model's rows."""
    return {**ALIGNMENT, "toy": TOY_CAT_ROW}


def errata(page: str) -> dict[str, dict[str, str]]:
    """The errata a page shows, in the reader's language, by id."""
    return {e.id: e.text() for e in ERRATA.values() if e.page == page}


# Every term as the lesson uses it, and where it is shown (page, anchor).
GLOSSARY: list[dict[str, Any]] = [
    {"zh": "编码器", "en": "encoder", "page": "encoder", "anchor": "layers",
     "def": _("The stack of layers that reads the input into as many vectors (the memory).")},
    {"zh": "解码器", "en": "decoder", "page": "decoder", "anchor": "order",
     "def": _("The stack that writes the target token by token, reading what it wrote and the encoder's memory.")},
    {"zh": "多头自注意力", "en": "multi-head self-attention", "page": "encoder", "anchor": "attention",
     "def": _("Positions of one sequence score and mix one another, in h heads side by side.")},
    {"zh": "缩放点积注意力", "en": "scaled dot-product attention", "page": "encoder", "anchor": "attention",
     "def": _("softmax(QKᵀ/√d_k)·V.")},
    {"zh": "位置编码", "en": "positional encoding", "page": "encoder", "anchor": "positions",
     "def": _("Sines and cosines added to the embeddings so that attention can tell word order.")},
    {"zh": "逐位置前馈网络", "en": "position-wise feed-forward network (FFN)", "page": "encoder", "anchor": "ffn",
     "def": _("FFN(x) = max(0, xW₁ + b₁)W₂ + b₂, applied to each position on its own.")},
    {"zh": "掩码", "en": "mask", "page": "decoder", "anchor": "mask",
     "def": _("A boolean matrix of which keys each query may see; hidden scores become −∞ before the softmax.")},
    {"zh": "因果掩码", "en": "causal mask", "page": "decoder", "anchor": "mask",
     "def": _("The lower-triangular mask: position t sees positions ≤ t only.")},
    {"zh": "填充掩码", "en": "padding mask", "page": "decoder", "anchor": "padding",
     "def": _("Keeps every position from looking at <pad> filler.")},
    {"zh": "交叉注意力", "en": "cross-attention", "page": "decoder", "anchor": "cross",
     "def": _("Queries from the decoder, keys and values from the encoder's final output.")},
    {"zh": "教师强制", "en": "teacher forcing", "page": "decoder", "anchor": "mask",
     "def": _("Feeding the whole true target to the decoder at once in training.")},
    {"zh": "自回归", "en": "autoregressive", "page": "decoder", "anchor": "inference",
     "def": _("Generating one token at a time, each step reading the previous outputs.")},
    {"zh": "KV 缓存", "en": "KV cache", "page": "decoder", "anchor": "inference",
     "def": _("Keeps the keys and values of past positions so each step computes only the new one.")},
    {"zh": "残差连接", "en": "residual connection", "page": "residual-norm", "anchor": "residual",
     "def": _("Adding a sublayer's input back to its output: x + Sublayer(…).")},
    {"zh": "层归一化", "en": "layer normalisation (LayerNorm)", "page": "residual-norm", "anchor": "layernorm",
     "def": _("Each position's own features brought to mean 0 and variance 1, then scaled by γ and shifted by β.")},
    {"zh": "批归一化", "en": "batch normalisation (BatchNorm)", "page": "questions", "anchor": "batchnorm",
     "def": _("Each feature normalised over the batch; at inference, running averages from training.")},
    {"zh": "RMS 归一化", "en": "RMSNorm", "page": "questions", "anchor": "rmsnorm",
     "def": _("Divides by the root mean square without subtracting the mean.")},
    {"zh": "Post-LN / Pre-LN", "en": "Post-LN / Pre-LN", "page": "residual-norm", "anchor": "placement",
     "def": _("LN(x + Sublayer(x)) against x + Sublayer(LN(x)).")},
    {"zh": "倒瓶颈", "en": "inverted bottleneck", "page": "questions", "anchor": "ffn-width",
     "def": _("Wide in the middle, narrow at both ends, as the FFN's d_model → 4·d_model → d_model.")},
]


def glossary() -> list[dict[str, str]]:
    return [{"zh": t["zh"], "en": t["en"], "page": t["page"], "anchor": t["anchor"], "definition": str(t["def"])}
            for t in GLOSSARY]


# Two or three things to try at the end of each page, each answerable with that page's own demonstration.
EXERCISES: dict[str, list[dict[str, Any]]] = {
    "overview": [
        {"id": "overview-1", "q": _("How many sublayers does each encoder layer have here, and each decoder layer? Count them in the picture."),
         "a": _("Two in the encoder (self-attention, FFN), three in the decoder (masked self-attention, cross-attention, FFN), each wrapped in a residual and a norm."),
         "options": [_("2 and 2"), _("2 and 3"), _("3 and 3")], "right": 1},
        {"id": "overview-2", "q": _("How many times d_model is d_ff in the paper, and in the model here?"),
         "a": _("In the paper 2048/512 = 4; here 256/128 = 2 (see the settings table)."),
         "options": [_("4 and 4"), _("2 and 4"), _("4 and 2")], "right": 2},
    ],
    "encoder": [
        {"id": "encoder-1", "q": _("After dividing a row's raw scores by √d_k, is the softmax sharper or flatter than it would be without the division?"),
         "a": _("Flatter: the gaps between scores shrink by √d_k, so the largest no longer takes almost all the weight."),
         "options": [_("Sharper"), _("Flatter"), _("The same")], "right": 1},
        {"id": "encoder-2", "q": _("Does the encoder's attention matrix have a masked (always 0) upper triangle?"),
         "a": _("No: the encoder is bidirectional; every position may look at every position (only <pad> would be hidden)."),
         "options": [_("Yes, as in the decoder"), _("No: every position sees every position")], "right": 1},
        {"id": "encoder-3", "q": _("About what share of the FFN's middle units are 0 after the ReLU?"),
         "a": _("Far more than half. On 我的猫追了一只老鼠。 zh-en-post leaves 0.83 to 1.00 of a token's middle units at 0 (the average of each layer: 0.93, 0.95, 0.97); zh-en-pre and zh-en-hsk are much the same (0.87 to 0.95 by layer). Each token lights a small set of units; some light none, and the FFN then gives only its bias b₂."),
         "options": [_("Under a tenth"), _("About half"), _("Far more than half")], "right": 2},
    ],
    "decoder": [
        {"id": "decoder-1", "q": _("Why is everything above the diagonal of the masked self-attention 0?"),
         "a": _("The causal mask sets future positions' scores to −∞, which the softmax turns into 0."),
         "options": [_("The model learned to ignore the future"), _("The causal mask sets their scores to −∞"), _("They are padding")], "right": 1},
        {"id": "decoder-2", "q": _("In the training comparison the unmasked model has the lower training loss. Why does it generate badly?"),
         "a": _("In training it could see the next target token and copy it; when generating, that token does not exist yet, and it never learned to predict it."),
         "options": [_("It saw the next target token and copied it"), _("It overfitted the training sentences"), _("Its learning rate was too high")], "right": 0},
        {"id": "decoder-3", "q": _("In the padding demonstration, how much does the shorter sentence's encoding differ between the batch and alone?"),
         "a": _("Only by rounding (within about 1e-6): the padding mask keeps <pad> from affecting the real positions."),
         "options": [_("By a few percent"), _("Completely: the padding changes it"), _("Only by rounding (about 1e-6)")], "right": 2},
    ],
    "residual-norm": [
        {"id": "residual-1", "q": _("Without residuals, what happens layer after layer to how distinct the positions are (the spread)?"),
         "a": _("It falls, on every model here (on 我的猫追了一只老鼠。: zh-en-post 0.82, 0.66, 0.54; zh-en-hsk 0.68, 0.28, 0.06), while with the residuals it stays about level: the positions merge and the sentence is blurred. The distance from the input tells no single story: on zh-en-post it jumps at the first layer and then stays about level, on zh-en-hsk it leaps at the last."),
         "options": [_("It stays about level"), _("It falls layer after layer"), _("It grows layer after layer")], "right": 1},
        {"id": "residual-2", "q": _("After LayerNorm, what are each position's mean and variance? Which buffers does it keep?"),
         "a": _("0 and 1 before γ and β; after them, whatever γ and β make it. It keeps no buffers (no running statistics); its parameters are weight (γ) and bias (β) only."),
         "options": [_("0 and 1 before γ and β; no running buffers"), _("0 and 1 after γ and β; running averages kept"), _("Whatever the batch gives")], "right": 0},
    ],
    "questions": [
        {"id": "questions-1", "q": _("Change the sentence to one of another length than its partner: does BatchNorm's shift change in training mode? In inference mode? LayerNorm's?"),
         "a": _("In training mode BatchNorm's shift moves with whatever shares the batch and its padding; in inference mode (running averages) it stays 0, as LayerNorm's does. The two BatchNorm modes still give the same token different vectors."),
         "options": [_("It moves with the batch in training, 0 in inference"), _("It never changes"), _("It moves in both modes")], "right": 0},
        {"id": "questions-2", "q": _("d_ff = 1×, 2×, 4× d_model: does the widest end with the lowest training loss, and how many more parameters does it take?"),
         "a": _("Neither, on this easy copy task. Over 16 seeds (each width trained with seeds 0 to 15), the 1× width ended lowest in 6, the 2× in 6 and the 4× in 4, and their mean final losses, 0.16 ± 0.01, 0.15 ± 0.01 and 0.15 ± 0.02 (± one standard error), lie within each other's spread: no reliable difference. One seed ranks them either way: with seed 1 the widest ends lowest, with seed 0 it does not, and which width wins at seed 0 even moves with the machine's arithmetic. So no width wins every time, while 4× takes about two thirds more parameters than 1× (61,848 against 36,888). Width buys capacity, which pays only when the task needs it; the paper's translation task is far harder than this one."),
         "options": [_("Yes, the widest always ends lowest"), _("No, the narrowest always ends lowest"), _("Neither: the order changes with the seed")], "right": 2},
    ],
    "glossary": [],
}


def exercises(page: str, revealed: list[str]) -> list[dict[str, Any]]:
    return [{"id": e["id"], "question": str(e["q"]), "answer": str(e["a"]), "revealed": e["id"] in revealed}
            for e in EXERCISES[page]]


def exercise_page(exercise_id: str) -> str | None:
    return next((page for page, items in EXERCISES.items() if any(e["id"] == exercise_id for e in items)), None)


# What a class predicts before a training comparison's result (webapp/lesson/figures.py ARM_LABELS: its arms);
# the experiments pages' comparisons a class can predict too (webapp/experiments/pages.py presets, their arms).
PREDICTIONS = {
    "mask": _("Trained with and without the causal mask: which ends with the lower training loss?"),
    "ffn": _("d_ff = 1×, 2× and 4× d_model: which ends with the lowest training loss?"),
    "norm-position": _("Post-LN and Pre-LN, 6+6 layers, no warmup, the same batches: which ends with the lower "
                       "training loss?"),
    "warmup": _("Post-LN, 6+6 layers, with and without warmup: which ends with the lower training loss?"),
    "residual": _("Pre-LN, 6+6 layers, with and without residual connections: which ends with the lower training "
                  "loss?"),
}


def exercise_question(exercise_id: str) -> dict[str, Any] | None:
    """An exercise as a multiple-choice question, in the active language: its prompt, options and the right option
    (None for an unknown exercise). The options keep their order in every language, so the right one is found by
    its place (exercise_right)."""
    page = exercise_page(exercise_id)
    if page is None:
        return None
    item = next(e for e in EXERCISES[page] if e["id"] == exercise_id)
    options = [str(o) for o in item["options"]]
    return {"id": exercise_id, "page": page, "prompt": str(item["q"]), "options": options,
            "right": options[item["right"]], "explanation": str(item["a"])}


def exercise_right(exercise_id: str, options: list[str]) -> tuple[str, str] | None:
    """The right option among `options` (as the question was asked, in whichever language) and the exercise's
    explanation in that language; None when the options are not this exercise's."""
    from django.conf import settings
    from django.utils import translation

    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            asked = exercise_question(exercise_id)
        if asked is not None and asked["options"] == options:
            return asked["right"], asked["explanation"]
    return None
