"""An embedding bag classifier with label smoothing and gradient clipping."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class Bag(nn.Module):
    def __init__(self, vocab, dim, classes):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, padding_idx=0)
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(p=0.0)
        self.fc = nn.Linear(dim, classes)

    def forward(self, tokens):
        e = self.embedding(tokens)
        mask = (tokens != 0).unsqueeze(-1).float()
        pooled = (e * mask).sum(1) / mask.sum(1).clamp(min=1)
        return self.fc(self.drop(self.norm(pooled)))


def run(data):
    rng = np.random.default_rng(9)
    tokens = torch.tensor(rng.integers(0, 12, size=(8, 5)))
    labels = torch.tensor(rng.integers(0, 3, size=8))
    model = Bag(12, 6, 3)
    with torch.no_grad():
        for _name, p in model.named_parameters():
            p.copy_(torch.tensor(rng.normal(0, 0.3, tuple(p.shape)), dtype=torch.float32))
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    out = []
    for _step in range(8):
        logits = model(tokens)
        loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        out += [loss.item(), float(norm)]
    probs = F.softmax(model(tokens), dim=-1)
    out.append(probs.sum().item())
    out.append(F.one_hot(labels, num_classes=3).sum().item())
    out.append(F.nll_loss(F.log_softmax(model(tokens), dim=1), labels).item())
    return out
