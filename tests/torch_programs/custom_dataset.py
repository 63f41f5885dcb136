"""A Dataset subclass with random_split and DataLoader batching, shuffling and drop_last."""

import torch
from torch.utils.data import DataLoader, Dataset, random_split


class Squares(Dataset):
    def __init__(self, n):
        self.x = torch.arange(n, dtype=torch.float32).unsqueeze(1)
        self.y = self.x**2

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        return self.x[idx], self.y[idx]


def run(data):
    ds = Squares(20)
    train, test = random_split(ds, [15, 5], generator=torch.Generator().manual_seed(1))
    out = [len(train), len(test)]
    loader = DataLoader(train, batch_size=4, shuffle=False, drop_last=True)
    for _batch, (xb, _yb) in enumerate(loader):
        out.append(xb.shape[0])
    out.append(len(loader))
    total = 0.0
    for _xb, yb in DataLoader(ds, batch_size=6):
        total += yb.sum().item()
    out.append(total)
    dl = DataLoader(ds, batch_size=5, shuffle=True, generator=torch.Generator().manual_seed(3))
    out.append(sum(xb.sum().item() for xb, _ in dl))
    it = iter(DataLoader(ds, batch_size=3))
    xb, yb = next(it)
    out += xb.flatten().tolist()
    td = torch.utils.data.TensorDataset(torch.ones(4, 2), torch.zeros(4))
    out.append(len(td))
    out.append(sum(b[0].sum().item() for b in DataLoader(td, batch_size=3)))
    return out
