"""Makes the benchmark model zoo with PyTorch (random init, fixed seeds, no downloads).

    /usr/bin/python3 bench/make_zoo.py [--models resnet50,bert] [--force]

Uses Debian's torch 1.13 / torchvision 0.14. For each model writes bench/models/<name>/:
  model.onnx                 opset 17, constant-folded, exported in eval mode, dynamic batch
  inputs_b1/<input>.npy      inputs at batch 1, named by ONNX input name
  inputs_b8/<input>.npy      inputs at batch 8
  outputs_b1/<output>.npy    PyTorch's outputs for those inputs, named by ONNX output name
  outputs_b8/<output>.npy

Models:
  resnet50      torchvision ResNet-50, image [B,3,224,224] -> logits [B,1000]
  mobilenet_v2  torchvision MobileNetV2, image [B,3,224,224] -> logits [B,1000]
  bert          BERT-base-like encoder (12 layers, hidden 768, 12 heads, FFN 3072, GELU(erf),
                LayerNorm, token + position embeddings); input_ids int64 [B,S], attention_mask
                int64 [B,S] (1 = attend, 0 = padding) -> last_hidden_state [B,S,768];
                dynamic batch and sequence, inputs saved at S=128
  dlrm          DLRM-like recommender: dense [B,13] -> bottom MLP 13-512-256-64; sparse int64
                [B,8] (column j indexes table j) into 8 embedding tables of dim 64 (5k-100k rows,
                425k in all: 109 MB); pairwise dot interaction; top MLP 100-512-256-1 + sigmoid -> click_prob [B,1]
  unet3d        small 3D U-Net (3 levels, 8/16/32 channels, Conv3d+BatchNorm3d+ReLU, MaxPool3d,
                ConvTranspose3d, skip Concats), volume [B,1,64,64,64] -> logits [B,2,64,64,64]

BatchNorm running statistics are calibrated on random data (a few train-mode forward passes with
a cumulative average) so that activations stay in range. Note that torch.onnx.export in eval mode
already folds BatchNorm into the preceding Conv, so the CNNs' graphs have no BatchNormalization
nodes (as users' exports do); torch 1.13 exports nn.LayerNorm at opset 17 as LayerNormalization and
nn.GELU as its erf primitives (Div, Erf, Add, Mul, Mul).
Existing models are skipped unless --force. Prints each model's size and operator counts.
"""
import argparse
import collections
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(ROOT, "models")
OPSET = 17
BATCHES = (1, 8)


# ---------------------------------------------------------------------------------------------
# Models


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.ffn_in = nn.Linear(hidden, ffn)
        self.gelu = nn.GELU()  # exact (erf) form
        self.ffn_out = nn.Linear(ffn, hidden)
        self.ffn_norm = nn.LayerNorm(hidden, eps=1e-12)

    def split_heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, additive_mask):
        b, s, h = x.shape
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + additive_mask
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, s, h)
        x = self.attn_norm(x + self.attn_out(ctx))
        return self.ffn_norm(x + self.ffn_out(self.gelu(self.ffn_in(x))))


class BertEncoder(nn.Module):
    def __init__(self, vocab=30522, max_pos=512, hidden=768, layers=12, heads=12, ffn=3072):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max_pos, hidden)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0))
        self.embed_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(hidden, heads, ffn) for _ in range(layers)])
        self.vocab = vocab
        # BERT's initializer, N(0, 0.02), with biases and LayerNorm affine parameters made non-trivial
        # as in a trained model (constant ones/zeros would also make the exporter merge equal
        # initializers behind Identity nodes).
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.bias, 0.0, 0.02)
            if isinstance(m, nn.LayerNorm):
                nn.init.uniform_(m.weight, 0.8, 1.2)
                nn.init.normal_(m.bias, 0.0, 0.05)

    def forward(self, input_ids, attention_mask):
        s = input_ids.shape[1]
        x = self.word_embeddings(input_ids) + self.position_embeddings(self.position_ids[:, :s])
        x = self.embed_norm(x)
        additive_mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, additive_mask)
        return x


DLRM_TABLE_ROWS = (100000, 50000, 100000, 20000, 80000, 10000, 60000, 5000)  # 425k x 64 floats = 109 MB


class Dlrm(nn.Module):
    def __init__(self, dense_features=13, dim=64, table_rows=DLRM_TABLE_ROWS):
        super().__init__()

        def mlp(sizes, last_act=True):
            layers = []
            for i in range(len(sizes) - 1):
                layers.append(nn.Linear(sizes[i], sizes[i + 1]))
                if last_act or i < len(sizes) - 2:
                    layers.append(nn.ReLU())
            return nn.Sequential(*layers)

        self.bottom = mlp([dense_features, 512, 256, dim])
        self.tables = nn.ModuleList([nn.Embedding(n, dim) for n in table_rows])
        for t in self.tables:
            nn.init.uniform_(t.weight, -1.0, 1.0)
        f = len(table_rows) + 1
        li, lj = zip(*[(i, j) for i in range(f) for j in range(i)])  # strictly lower triangle
        self.register_buffer("pair_index", torch.tensor([i * f + j for i, j in zip(li, lj)], dtype=torch.int64))
        self.top = mlp([dim + len(li), 512, 256, 1], last_act=False)
        for m in self.modules():  # DLRM's MLP initializer, so that the output varies with the input
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0.0, math.sqrt(2.0 / (m.in_features + m.out_features)))
                nn.init.normal_(m.bias, 0.0, math.sqrt(1.0 / m.out_features))

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        feats = [x] + [t(sparse[:, j]) for j, t in enumerate(self.tables)]
        t = torch.stack(feats, dim=1)  # [B, F, D]
        z = torch.bmm(t, t.transpose(1, 2)).flatten(1)  # [B, F*F]
        pairs = torch.index_select(z, 1, self.pair_index)
        return torch.sigmoid(self.top(torch.cat([x, pairs], dim=1)))


class UNet3d(nn.Module):
    def __init__(self, in_ch=1, classes=2, base=8):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(
                nn.Conv3d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm3d(cout), nn.ReLU(inplace=True),
                nn.Conv3d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm3d(cout), nn.ReLU(inplace=True))

        c1, c2, c3 = base, base * 2, base * 4
        self.enc1 = block(in_ch, c1)
        self.enc2 = block(c1, c2)
        self.bottleneck = block(c2, c3)
        self.pool = nn.MaxPool3d(2)
        self.up2 = nn.ConvTranspose3d(c3, c2, 2, stride=2)
        self.dec2 = block(c2 * 2, c2)
        self.up1 = nn.ConvTranspose3d(c2, c1, 2, stride=2)
        self.dec1 = block(c1 * 2, c1)
        self.head = nn.Conv3d(c1, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        b = self.bottleneck(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


# ---------------------------------------------------------------------------------------------
# Inputs


def image_inputs(shape):
    def make(batch, gen):
        return {"image": torch.randn((batch,) + shape, generator=gen)}
    return make


def volume_inputs(batch, gen):
    return {"volume": torch.randn((batch, 1, 64, 64, 64), generator=gen)}


def bert_inputs(batch, gen, seq=128, vocab=30522):
    ids = torch.randint(0, vocab, (batch, seq), generator=gen, dtype=torch.int64)
    mask = torch.ones((batch, seq), dtype=torch.int64)
    for b in range(batch):  # row b has b*8+16 padding positions at the end (batch 1: 16)
        pad = 16 + 8 * b
        mask[b, seq - pad:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def dlrm_inputs(batch, gen):
    dense = torch.log1p(torch.randn((batch, 13), generator=gen).abs() * 10)
    sparse = torch.stack([torch.randint(0, n, (batch,), generator=gen, dtype=torch.int64) for n in DLRM_TABLE_ROWS], 1)
    return {"dense": dense, "sparse": sparse}


# ---------------------------------------------------------------------------------------------
# Build


def calibrate_batchnorm(model, make_inputs, batch, passes, gen):
    """Sets BatchNorm running stats to the cumulative average over `passes` random batches."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(passes):
            model(*make_inputs(batch, gen).values())
    model.eval()


def build_resnet50():
    import torchvision
    return torchvision.models.resnet50(weights=None)


def build_mobilenet_v2():
    import torchvision
    return torchvision.models.mobilenet_v2(weights=None)


SPECS = collections.OrderedDict([
    # name: (builder, make_inputs, output names, dynamic axes, bn calibration (batch, passes))
    ("resnet50", (build_resnet50, image_inputs((3, 224, 224)), ["logits"],
                  {"image": {0: "batch"}, "logits": {0: "batch"}}, (8, 2))),
    ("mobilenet_v2", (build_mobilenet_v2, image_inputs((3, 224, 224)), ["logits"],
                      {"image": {0: "batch"}, "logits": {0: "batch"}}, (8, 2))),
    ("bert", (BertEncoder, bert_inputs, ["last_hidden_state"],
              {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
               "last_hidden_state": {0: "batch", 1: "sequence"}}, None)),
    ("dlrm", (Dlrm, dlrm_inputs, ["click_prob"],
              {"dense": {0: "batch"}, "sparse": {0: "batch"}, "click_prob": {0: "batch"}}, None)),
    ("unet3d", (UNet3d, volume_inputs, ["logits"],
                {"volume": {0: "batch"}, "logits": {0: "batch"}}, (2, 2))),
])


def op_counts(path):
    """Operator counts of an ONNX file, read with a minimal protobuf wire-format walk
    (ModelProto.graph = 7, GraphProto.node = 1, NodeProto.op_type = 4), so no onnx package."""
    def fields(buf):
        i, n = 0, len(buf)
        while i < n:
            key, i = varint(buf, i)
            field, wire = key >> 3, key & 7
            if wire == 0:
                _, i = varint(buf, i)
            elif wire == 1:
                i += 8
            elif wire == 5:
                i += 4
            elif wire == 2:
                length, i = varint(buf, i)
                yield field, buf[i:i + length]
                i += length
            else:
                raise ValueError("unsupported wire type %d" % wire)

    def varint(buf, i):
        shift = result = 0
        while True:
            b = buf[i]
            i += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result, i
            shift += 7

    with open(path, "rb") as f:
        data = memoryview(f.read())
    counts = collections.Counter()
    for field, graph in fields(data):
        if field != 7:
            continue
        for gf, node in fields(graph):
            if gf != 1:
                continue
            for nf, value in fields(node):
                if nf == 4:
                    counts[bytes(value).decode()] += 1
    return counts


def save_npys(folder, named):
    os.makedirs(folder, exist_ok=True)
    for name, t in named.items():
        np.save(os.path.join(folder, name + ".npy"), t.detach().numpy())


def make_model(name, force):
    builder, make_inputs, output_names, dynamic_axes, bn_calib = SPECS[name]
    out_dir = os.path.join(MODELS_DIR, name)
    done_marker = os.path.join(out_dir, "outputs_b8")
    if os.path.isdir(done_marker) and os.path.exists(os.path.join(out_dir, "model.onnx")) and not force:
        report(name + " (exists, kept; --force remakes it)", os.path.join(out_dir, "model.onnx"))
        return
    t0 = time.time()
    seed = 1000 + list(SPECS).index(name)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = builder()
    if bn_calib:
        calibrate_batchnorm(model, make_inputs, bn_calib[0], bn_calib[1], gen)
    model.eval()
    os.makedirs(out_dir, exist_ok=True)

    inputs = {b: make_inputs(b, gen) for b in BATCHES}
    export_inputs = make_inputs(2, gen)  # batch 2 so that the trace does not specialize batch 1
    path = os.path.join(out_dir, "model.onnx")
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(model, tuple(export_inputs.values()), tmp, opset_version=OPSET,
                          do_constant_folding=True, input_names=list(export_inputs),
                          output_names=output_names, dynamic_axes=dynamic_axes)
    os.replace(tmp, path)
    with torch.no_grad():
        for b in BATCHES:
            outs = model(*inputs[b].values())
            outs = outs if isinstance(outs, (tuple, list)) else (outs,)
            save_npys(os.path.join(out_dir, f"inputs_b{b}"), inputs[b])
            save_npys(os.path.join(out_dir, f"outputs_b{b}"), dict(zip(output_names, outs)))
    report(name, path, time.time() - t0)


def report(name, path, seconds=None):
    counts = op_counts(path)
    size_mb = os.path.getsize(path) / 1e6
    ops = ", ".join(f"{op} {n}" for op, n in counts.most_common())
    took = f", made in {seconds:.1f} s" if seconds is not None else ""
    print(f"{name}: {size_mb:.1f} MB, {sum(counts.values())} nodes{took}\n    {ops}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(SPECS), help="comma-separated subset of: " + ", ".join(SPECS))
    ap.add_argument("--force", action="store_true", help="remake models that already exist")
    args = ap.parse_args()
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in SPECS]
    if unknown:
        sys.exit(f"unknown model(s): {', '.join(unknown)}; known: {', '.join(SPECS)}")
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for name in names:
        make_model(name, args.force)
    print("models in", MODELS_DIR)


if __name__ == "__main__":
    main()
