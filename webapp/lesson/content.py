"""The lesson's fixed material in both languages: pages, the paper's settings, errata, glossary, exercises.

Prose lives in templates/lesson/<lang>/; what several pages or the tests share lives here. Each text is a
{"zh": ..., "en": ...} pair: the lesson was written in Chinese, so Chinese comes first.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import get_language

PAGES = ("overview", "encoder", "decoder", "residual-norm", "questions", "glossary")
PAGE_TITLES = {
    "overview": {"zh": "总览：编码器-解码器", "en": "Overview: the encoder-decoder"},
    "encoder": {"zh": "编码器：理解输入序列", "en": "The encoder: reading the input"},
    "decoder": {"zh": "解码器：生成输出序列", "en": "The decoder: writing the output"},
    "residual-norm": {"zh": "残差连接与层归一化", "en": "Residual connections and layer normalisation"},
    "questions": {"zh": "重点答疑", "en": "Questions and answers"},
    "glossary": {"zh": "术语表", "en": "Glossary"},
}


def lang() -> str:
    """'zh' or 'en': which of each pair the reader gets."""
    return "zh" if (get_language() or "en").startswith("zh") else "en"


def pick(pair: dict[str, str]) -> str:
    return pair[lang()]


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


TYING = {
    "none": {"zh": "论文的尺寸、共享的 37,000 词表，不绑定", "en": "the paper's sizes, a shared 37,000-token vocabulary, untied"},
    "output": {"zh": "同上，解码器的词嵌入与输出层绑定（tie_embeddings）",
               "en": "the same, the decoder's embedding tied with the output layer (tie_embeddings)"},
    "all": {"zh": "同上，三者绑定：编码器的词嵌入也共用（再加 share_embeddings），与论文相同",
            "en": "the same, all three tied: the encoder's embedding shared too (share_embeddings as well), as in the paper"},
}


def parameter_rows(shipped: list[tuple[str, dict[str, Any]]]) -> list[dict[str, str]]:
    """The overview's parameter table: the paper's count, its sizes under each tying, then each shipped model."""
    rows = [{"label": pick({"zh": "论文的基础模型（表 3）", "en": "the paper's base model (its Table 3)"}),
             "count": count_text(PAPER_PARAMETERS), "testid": "paper"}]
    rows += [{"label": pick(TYING[row["tying"]]), "count": count_text(row["parameters"]), "testid": f"tying-{row['tying']}"}
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
    correction: dict[str, str]

    def text(self) -> dict[str, str]:
        return {"id": self.id, "quote": self.quote, "quote_en": self.quote_en, "correction": pick(self.correction)}


ERRATA = {e.id: e for e in (
    Erratum("a", "residual-norm",
            "原始Transformer使用的是Post-LN（x + Sublayer(LN(x))），但后来发现Pre-LN（LN(x + Sublayer(x))）训练更稳定",
            "The original Transformer used Post-LN (x + Sublayer(LN(x))), but later Pre-LN (LN(x + Sublayer(x))) "
            "was found to train more stably",
            {"zh": "两个公式写反了。Post-LN（2017 年论文的做法）是先加残差、再归一化：x = LN(x + Sublayer(x))；"
                   "Pre-LN 是先归一化、再进子层、最后加残差：x = x + Sublayer(LN(x))，并且整个堆叠的最后还要再接一个 LN。"
                   "“Pre-LN 更稳定”这一点本身没错。",
             "en": "The two formulas are swapped. Post-LN (the 2017 paper) adds the residual first and normalises "
                   "the sum: x = LN(x + Sublayer(x)). Pre-LN normalises the sublayer's input and adds the residual "
                   "after: x = x + Sublayer(LN(x)), with one more LN after the last layer of the stack. That Pre-LN "
                   "trains more stably is right."}),
    Erratum("b", "residual-norm",
            "另外，LayerNorm在推理时如果batch size很小，统计量不稳定，通常使用训练时累积的移动平均。",
            "Also, at inference with a small batch size LayerNorm's statistics are unstable, so it usually uses "
            "moving averages accumulated during training.",
            {"zh": "LayerNorm 不保存任何滑动统计量。它对每个位置自己的 d_model 个特征求均值和方差，训练和推理时都一样，"
                   "所以与批大小无关；它唯一的参数是增益 γ 和偏置 β。使用训练时累积的滑动平均的是 BatchNorm。",
             "en": "LayerNorm keeps no running statistics. It takes the mean and variance over each position's own "
                   "d_model features, in training and at inference alike, so the batch size does not matter; its "
                   "only parameters are the gain γ and the bias β. Moving averages from training are BatchNorm's."}),
    Erratum("c", "questions",
            "②推理时batch size可能很小（如batch=1），统计量不稳定。",
            "② at inference the batch size may be small (e.g. batch=1), so the statistics are unstable.",
            {"zh": "这把训练和推理混在了一起。BatchNorm 在推理时用的是训练中累积的滑动平均，批大小为 1 也不需要现算统计量。"
                   "它在 NLP 中真正的问题出在训练时：统计量跨越整个批次计算，会混入填充（<pad>）位置，"
                   "并随着批次里碰巧放了哪些句子而变化；推理时的滑动平均又和训练时每个批次的统计量不一致。",
             "en": "This mixes training and inference. At inference BatchNorm uses the running averages gathered in "
                   "training, so batch=1 needs no statistics of its own. Its real trouble in NLP is in training: its "
                   "statistics span the batch, take in padding positions and change with whichever sentences happen "
                   "to share the batch; the running averages used later then differ from what each batch saw."}),
    Erratum("d", "questions",
            "这种\"先扩大再缩小\"的设计（bottleneck结构）提供了更大的表示容量",
            "This \"widen, then narrow\" design (a bottleneck structure) gives more representational capacity",
            {"zh": "瓶颈结构是先变窄再变宽；FFN 从 d_model 扩到 d_ff = 4·d_model 再收回 d_model，"
                   "中间最宽，这是“倒瓶颈”。加宽带来的是更多参数和 ReLU 后的更多独立单元。",
             "en": "A bottleneck narrows and then widens. The FFN goes from d_model up to d_ff = 4·d_model and back, "
                   "widest in the middle: an inverted bottleneck. What the width buys is more parameters and more "
                   "independent units after the ReLU."}),
    Erratum("e", "residual-norm",
            "无残差连接时，每层输出与原始输入的距离越来越大",
            "Without residual connections, each layer's output moves further and further from the original input",
            {"zh": "这是课程里那段随机权重演示代码打印的结论，真实模型不是这样。去掉训练好的模型的残差后，距离在第一层就跳到很大，"
                   "之后基本不再增长；真正发生的是各位置彼此靠拢（位置间的区分度下降），句子的信息被抹平。"
                   "下面的演示在真实模型上给出每一层的数值。",
             "en": "That is what the NumPy toy printed, not what the real model does. Remove the residuals of the "
                   "trained model and the distance jumps at the first layer and then hardly grows; what really "
                   "happens is that the positions move towards one another (they become harder to tell apart) and "
                   "the sentence is blurred. The demonstration below gives each layer's numbers on the real model."}),
)}


def errata(page: str) -> dict[str, dict[str, str]]:
    """The errata a page shows, in the reader's language, by id."""
    return {e.id: e.text() for e in ERRATA.values() if e.page == page}


# Every term as the lesson uses it, and where it is shown (page, anchor).
GLOSSARY: list[dict[str, Any]] = [
    {"zh": "编码器", "en": "encoder", "page": "encoder", "anchor": "layers",
     "def": {"zh": "把输入序列变成一串向量（每个位置一个，即编码器的输出）的层堆叠。", "en": "The stack of layers that reads the input into as many vectors (the memory)."}},
    {"zh": "解码器", "en": "decoder", "page": "decoder", "anchor": "order",
     "def": {"zh": "一边看已生成的部分、一边看编码器输出，逐个生成目标词的层堆叠。", "en": "The stack that writes the target token by token, reading what it wrote and the encoder's memory."}},
    {"zh": "多头自注意力", "en": "multi-head self-attention", "page": "encoder", "anchor": "attention",
     "def": {"zh": "同一序列的各位置互相打分并加权求和，分成 h 个注意力头各算一遍。", "en": "Positions of one sequence score and mix one another, in h heads side by side."}},
    {"zh": "缩放点积注意力", "en": "scaled dot-product attention", "page": "encoder", "anchor": "attention",
     "def": {"zh": "softmax(QKᵀ/√d_k)·V。", "en": "softmax(QKᵀ/√d_k)·V."}},
    {"zh": "位置编码", "en": "positional encoding", "page": "encoder", "anchor": "positions",
     "def": {"zh": "加在词向量上的正弦/余弦信号，让注意力分得清词序。", "en": "Sines and cosines added to the embeddings so that attention can tell word order."}},
    {"zh": "逐位置前馈网络", "en": "position-wise feed-forward network (FFN)", "page": "encoder", "anchor": "ffn",
     "def": {"zh": "FFN(x) = max(0, xW₁ + b₁)W₂ + b₂，对每个位置单独计算。", "en": "FFN(x) = max(0, xW₁ + b₁)W₂ + b₂, applied to each position on its own."}},
    {"zh": "掩码", "en": "mask", "page": "decoder", "anchor": "mask",
     "def": {"zh": "规定每个查询可以看哪些键的布尔矩阵；被遮住的分数在 softmax 前设为 −∞。", "en": "A boolean matrix of which keys each query may see; hidden scores become −∞ before the softmax."}},
    {"zh": "因果掩码", "en": "causal mask", "page": "decoder", "anchor": "mask",
     "def": {"zh": "下三角掩码：位置 t 只能看 ≤ t 的位置。", "en": "The lower-triangular mask: position t sees positions ≤ t only."}},
    {"zh": "填充掩码", "en": "padding mask", "page": "decoder", "anchor": "padding",
     "def": {"zh": "让任何位置都不去看补齐用的 <pad>。", "en": "Keeps every position from looking at <pad> filler."}},
    {"zh": "交叉注意力", "en": "cross-attention", "page": "decoder", "anchor": "cross",
     "def": {"zh": "Q 来自解码器，K 和 V 来自编码器最后一层的输出。", "en": "Queries from the decoder, keys and values from the encoder's final output."}},
    {"zh": "教师强制", "en": "teacher forcing", "page": "decoder", "anchor": "mask",
     "def": {"zh": "训练时把正确的目标整句一次送入解码器。", "en": "Feeding the whole true target to the decoder at once in training."}},
    {"zh": "自回归", "en": "autoregressive", "page": "decoder", "anchor": "inference",
     "def": {"zh": "推理时逐词生成，每步把上一步的输出接到输入后面。", "en": "Generating one token at a time, each step reading the previous outputs."}},
    {"zh": "KV 缓存", "en": "KV cache", "page": "decoder", "anchor": "inference",
     "def": {"zh": "保存已生成位置的键和值，每步只算新位置。", "en": "Keeps the keys and values of past positions so each step computes only the new one."}},
    {"zh": "残差连接", "en": "residual connection", "page": "residual-norm", "anchor": "residual",
     "def": {"zh": "把子层的输入加回到它的输出上：x + Sublayer(…)。", "en": "Adding a sublayer's input back to its output: x + Sublayer(…)."}},
    {"zh": "层归一化", "en": "layer normalisation (LayerNorm)", "page": "residual-norm", "anchor": "layernorm",
     "def": {"zh": "对每个位置自己的特征做均值 0、方差 1 的标准化，再乘 γ 加 β。", "en": "Each position's own features brought to mean 0 and variance 1, then scaled by γ and shifted by β."}},
    {"zh": "批归一化", "en": "batch normalisation (BatchNorm)", "page": "questions", "anchor": "batchnorm",
     "def": {"zh": "对每个特征在整个批次上标准化，推理时用训练中累积的滑动平均。", "en": "Each feature normalised over the batch; at inference, running averages from training."}},
    {"zh": "RMS 归一化", "en": "RMSNorm", "page": "questions", "anchor": "rmsnorm",
     "def": {"zh": "只除以均方根、不减均值的归一化。", "en": "Divides by the root mean square without subtracting the mean."}},
    {"zh": "Post-LN / Pre-LN", "en": "Post-LN / Pre-LN", "page": "residual-norm", "anchor": "placement",
     "def": {"zh": "LN(x + Sublayer(x)) 与 x + Sublayer(LN(x))。", "en": "LN(x + Sublayer(x)) against x + Sublayer(LN(x))."}},
    {"zh": "倒瓶颈", "en": "inverted bottleneck", "page": "questions", "anchor": "ffn-width",
     "def": {"zh": "先变宽再变窄的结构，如 FFN 的 d_model → 4·d_model → d_model。", "en": "Wide in the middle, narrow at both ends, as the FFN's d_model → 4·d_model → d_model."}},
]


def glossary() -> list[dict[str, str]]:
    return [{"zh": t["zh"], "en": t["en"], "page": t["page"], "anchor": t["anchor"], "definition": pick(t["def"])}
            for t in GLOSSARY]


# Two or three things to try at the end of each page, each answerable with that page's own demonstration.
EXERCISES: dict[str, list[dict[str, Any]]] = {
    "overview": [
        {"id": "overview-1", "q": {"zh": "这里的编码器每层有几个子层？解码器呢？图里数一数。", "en": "How many sublayers does each encoder layer have here, and each decoder layer? Count them in the picture."},
         "a": {"zh": "编码器 2 个（自注意力、FFN），解码器 3 个（掩码自注意力、交叉注意力、FFN），每个外面都有残差和归一化。", "en": "Two in the encoder (self-attention, FFN), three in the decoder (masked self-attention, cross-attention, FFN), each wrapped in a residual and a norm."}},
        {"id": "overview-2", "q": {"zh": "论文的 d_ff 是 d_model 的几倍？这里的模型呢？", "en": "How many times d_model is d_ff in the paper, and in the model here?"},
         "a": {"zh": "论文 2048/512 = 4 倍；这里 256/128 = 2 倍（见设置表）。", "en": "In the paper 2048/512 = 4; here 256/128 = 2 (see the settings table)."}},
    ],
    "encoder": [
        {"id": "encoder-1", "q": {"zh": "把某一行的原始分数除以 √d_k 之后，softmax 的结果变得更尖还是更平？", "en": "After dividing a row's raw scores by √d_k, is the softmax sharper or flatter than it would be without the division?"},
         "a": {"zh": "更平：分数之间的差距缩小了 √d_k 倍，最大项不再独占几乎全部权重。", "en": "Flatter: the gaps between scores shrink by √d_k, so the largest no longer takes almost all the weight."}},
        {"id": "encoder-2", "q": {"zh": "编码器的注意力矩阵里有没有被遮住的（恒为 0 的）上三角？", "en": "Does the encoder's attention matrix have a masked (always 0) upper triangle?"},
         "a": {"zh": "没有：编码器是双向的，每个位置可以看所有位置（只有 <pad> 会被遮住）。", "en": "No: the encoder is bidirectional; every position may look at every position (only <pad> would be hidden)."}},
        {"id": "encoder-3", "q": {"zh": "FFN 中间层经过 ReLU 后大约有多少比例是 0？", "en": "About what share of the FFN's middle units are 0 after the ReLU?"},
         "a": {"zh": "远多于一半。在“我的猫追了一只老鼠。”上，zh-en-post 每个词有 0.83 到 1.00 的中间单元为 0（三层各自的平均：0.93、0.95、0.97）；zh-en-pre 和 zh-en-hsk 也差不多（各层平均 0.87 到 0.94）。每个词只有一小部分单元不为 0；有的词全部为 0，这时 FFN 只输出偏置 b₂。",
               "en": "Far more than half. On 我的猫追了一只老鼠。 zh-en-post leaves 0.83 to 1.00 of a token's middle units at 0 (the average of each layer: 0.93, 0.95, 0.97); zh-en-pre and zh-en-hsk are much the same (0.87 to 0.94 by layer). Each token lights a small set of units; some light none, and the FFN then gives only its bias b₂."}},
    ],
    "decoder": [
        {"id": "decoder-1", "q": {"zh": "掩码自注意力矩阵的对角线以上为什么全是 0？", "en": "Why is everything above the diagonal of the masked self-attention 0?"},
         "a": {"zh": "因果掩码把未来位置的分数设为 −∞，softmax 后权重就是 0。", "en": "The causal mask sets future positions' scores to −∞, which the softmax turns into 0."}},
        {"id": "decoder-2", "q": {"zh": "在训练对比里，不加掩码的模型训练损失更低，为什么生成反而不行？", "en": "In the training comparison the unmasked model has the lower training loss. Why does it generate badly?"},
         "a": {"zh": "训练时它能直接看到下一个目标词并照抄；生成时下一个词还不存在，它从没学过真正去预测。", "en": "In training it could see the next target token and copy it; when generating, that token does not exist yet, and it never learned to predict it."}},
        {"id": "decoder-3", "q": {"zh": "在填充演示中，短句子在批次里和单独编码时的结果差多少？", "en": "In the padding demonstration, how much does the shorter sentence's encoding differ between the batch and alone?"},
         "a": {"zh": "只差浮点舍入（约 1e-6 以内）：填充掩码让 <pad> 对真实位置毫无影响。", "en": "Only by rounding (within about 1e-6): the padding mask keeps <pad> from affecting the real positions."}},
    ],
    "residual-norm": [
        {"id": "residual-1", "q": {"zh": "去掉残差后，与输入的距离是逐层越来越大吗？", "en": "Without residuals, does the distance from the input grow layer after layer?"},
         "a": {"zh": "不是：第一层就跳上去，之后大致持平；下降的是位置之间的区分度。", "en": "No: it jumps at the first layer and then stays about level; what falls is how distinct the positions are."}},
        {"id": "residual-2", "q": {"zh": "LayerNorm 之后每个位置的均值和方差是多少？它保存了哪些缓冲区？", "en": "After LayerNorm, what are each position's mean and variance? Which buffers does it keep?"},
         "a": {"zh": "在乘 γ、加 β 之前分别是 0 和 1；之后由 γ、β 决定。它没有任何缓冲区（没有滑动统计量），参数只有 weight（γ）和 bias（β）。", "en": "0 and 1 before γ and β; after them, whatever γ and β make it. It keeps no buffers (no running statistics); its parameters are weight (γ) and bias (β) only."}},
    ],
    "questions": [
        {"id": "questions-1", "q": {"zh": "把句子换成和搭档句不同长度的另一句，BatchNorm 在训练模式下的偏移变了吗？推理模式下呢？LayerNorm 呢？", "en": "Change the sentence to one of another length than its partner: does BatchNorm's shift change in training mode? In inference mode? LayerNorm's?"},
         "a": {"zh": "训练模式下，BatchNorm 的偏移随同批的句子和 padding 变化；推理模式（滑动平均）下和 LayerNorm 一样始终为 0。但 BatchNorm 的两种模式给同一个词的结果仍然不同。", "en": "In training mode BatchNorm's shift moves with whatever shares the batch and its padding; in inference mode (running averages) it stays 0, as LayerNorm's does. The two BatchNorm modes still give the same token different vectors."}},
        {"id": "questions-2", "q": {"zh": "d_ff = 1×、2×、4× d_model，哪个最终训练损失最低？参数多了多少？", "en": "d_ff = 1×, 2×, 4× d_model: which ends with the lowest training loss, and how many more parameters does the widest take?"},
         "a": {"zh": "看表：在这个很简单的复制任务上，最宽的 4× 最终损失并不最低。按默认设置（种子 0、300 步），1× 最低，4× 最高；而 4× 的参数比 1× 多约三分之二（61,848 对 36,888）。加宽买来的是容量，只有任务需要时才显出好处，论文的翻译任务比这里难得多。", "en": "Read the table: on this easy copy task the widest, 4×, does not end with the lowest loss. With the default settings (seed 0, 300 steps) 1× ends lowest and 4× highest, while 4× takes about two thirds more parameters than 1× (61,848 against 36,888). Width buys capacity, which pays only when the task needs it; the paper's translation task is far harder than this one."}},
    ],
    "glossary": [],
}


def exercises(page: str, revealed: list[str]) -> list[dict[str, Any]]:
    return [{"id": e["id"], "question": pick(e["q"]), "answer": pick(e["a"]), "revealed": e["id"] in revealed}
            for e in EXERCISES[page]]


def exercise_page(exercise_id: str) -> str | None:
    return next((page for page, items in EXERCISES.items() if any(e["id"] == exercise_id for e in items)), None)
