#!/usr/bin/env python3
"""Graph and point-cloud networks, whose exports lean on the scatter and gather ops the image
and language models hardly use: PyTorch Geometric's GCN, GAT (a softmax over each node's
edges: scatter max and sum), GraphSAGE (mean aggregation), GIN, TransformerConv and a
graph classifier pooling per graph (global mean / max pool over a batch vector), and a
PointNet and a DGCNN-style EdgeConv over k nearest neighbours found by TopK.
Seeded random weights and graphs; `n_NAME` from the TorchScript exporter (opset 17),
`nd_NAME` from the default one of PyTorch 2 (`dynamo=True`). Output convention as the other
scripts (OUT/NAME.onnx + OUT/NAME.input_K.npy).

Needs: python3 -m venv VENV && VENV/bin/pip install torch onnxscript torch_geometric
Usage: VENV/bin/python scripts/make_graph_models.py OUT [NAME ...]"""
import os
import sys

import torch
import torch.nn as nn
import torch_geometric.nn as gnn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_each import export_each, export_torch, parse_name  # noqa: E402

NODES, FEATURES, EDGES = 40, 12, 160


def random_graph(nodes=NODES, edges=EDGES):
    return torch.randint(0, nodes, (2, edges))


class TwoLayer(nn.Module):
    """conv -> ReLU -> conv on (x, edge_index)."""

    def __init__(self, first, second):
        super().__init__()
        self.first, self.second = first, second

    def forward(self, x, edge_index):
        return self.second(self.first(x, edge_index).relu(), edge_index)


def gcn():
    return TwoLayer(gnn.GCNConv(FEATURES, 32), gnn.GCNConv(32, 7))


def gat():
    return TwoLayer(gnn.GATConv(FEATURES, 8, heads=4), gnn.GATConv(32, 7, heads=1))


def sage():
    return TwoLayer(gnn.SAGEConv(FEATURES, 32), gnn.SAGEConv(32, 7, aggr='max'))


def gin():
    mlp = lambda i, o: nn.Sequential(nn.Linear(i, 32), nn.ReLU(), nn.Linear(32, o))  # noqa: E731
    return TwoLayer(gnn.GINConv(mlp(FEATURES, 32), train_eps=True), gnn.GINConv(mlp(32, 7)))


def transformer():
    return TwoLayer(gnn.TransformerConv(FEATURES, 8, heads=2), gnn.TransformerConv(16, 7, heads=1))


class GraphClassifier(nn.Module):
    """Three graphs in one batch: GCN layers, then mean and max pooling per graph."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = gnn.GCNConv(FEATURES, 32), gnn.GCNConv(32, 32)
        self.head = nn.Linear(64, 5)

    def forward(self, x, edge_index, batch):
        h = self.conv2(self.conv1(x, edge_index).relu(), edge_index).relu()
        pooled = torch.cat([gnn.global_mean_pool(h, batch, 3), gnn.global_max_pool(h, batch, 3)], 1)
        return self.head(pooled)


def classifier_inputs():
    """Node features, edges that stay within each node's graph, and the sorted batch vector
    saying which of the 3 graphs each node is in."""
    batch = torch.sort(torch.cat([torch.arange(3), torch.randint(0, 3, (NODES - 3,))])).values
    src = torch.randint(0, NODES, (EDGES,))
    members = [torch.nonzero(batch == g).flatten() for g in range(3)]
    dst = torch.stack([members[int(batch[s])][torch.randint(0, len(members[int(batch[s])]), ())] for s in src])
    return torch.randn(NODES, FEATURES), torch.stack([src, dst]), batch


class PointNet(nn.Module):
    """Shared per-point MLP (Conv1d), max over points, classifier."""

    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Conv1d(3, 32, 1), nn.BatchNorm1d(32), nn.ReLU(), nn.Conv1d(32, 64, 1),
                                 nn.BatchNorm1d(64), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))

    def forward(self, points):  # [B, 3, P]
        return self.head(self.mlp(points).max(dim=2).values)


class EdgeConvNet(nn.Module):
    """DGCNN's EdgeConv: k nearest neighbours by TopK of negative distances, edge features
    [x_i, x_j - x_i] through an MLP, max over the neighbours."""

    def __init__(self, k=8):
        super().__init__()
        self.k = k
        self.edge1 = nn.Sequential(nn.Conv2d(6, 32, 1, bias=False), nn.BatchNorm2d(32), nn.LeakyReLU(0.2))
        self.edge2 = nn.Sequential(nn.Conv2d(64, 32, 1, bias=False), nn.BatchNorm2d(32), nn.LeakyReLU(0.2))
        self.head = nn.Linear(64, 10)

    def edge_features(self, x):  # [B, C, P] -> [B, 2C, P, k]
        inner = -2 * torch.matmul(x.transpose(2, 1), x)
        square = (x ** 2).sum(dim=1, keepdim=True)
        idx = (-square - inner - square.transpose(2, 1)).topk(k=self.k, dim=-1)[1]  # [B, P, k]
        b, c, p = x.shape
        base = torch.arange(b).view(-1, 1, 1) * p
        flat = x.transpose(2, 1).reshape(b * p, c)
        neighbours = flat[(idx + base).view(-1)].view(b, p, self.k, c)
        centre = x.transpose(2, 1).unsqueeze(2).expand(-1, -1, self.k, -1)
        return torch.cat([centre, neighbours - centre], dim=3).permute(0, 3, 1, 2)

    def forward(self, points):
        h1 = self.edge1(self.edge_features(points)).max(dim=-1).values
        h2 = self.edge2(self.edge_features(h1)).max(dim=-1).values
        return self.head(torch.cat([h1, h2], 1).max(dim=-1).values)


MODELS = {
    'gcn': lambda: (gcn(), (torch.randn(NODES, FEATURES), random_graph())),
    'gat': lambda: (gat(), (torch.randn(NODES, FEATURES), random_graph())),
    'sage': lambda: (sage(), (torch.randn(NODES, FEATURES), random_graph())),
    'gin': lambda: (gin(), (torch.randn(NODES, FEATURES), random_graph())),
    'transformer': lambda: (transformer(), (torch.randn(NODES, FEATURES), random_graph())),
    'classifier': lambda: (GraphClassifier(), classifier_inputs()),
    'pointnet': lambda: (PointNet(), (torch.randn(4, 3, 128),)),
    'edgeconv': lambda: (EdgeConvNet(), (torch.randn(2, 3, 64),)),
}


def export(name, out):
    dynamo, arch = parse_name(name, ('n_', 'nd_'), MODELS)
    torch.manual_seed(0)
    model, args = MODELS[arch]()
    export_torch(model.eval(), args, out, name, dynamo)


def main(out, names):
    export_each(out, names or [p + a for a in MODELS for p in ('n_', 'nd_')], export)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2:])
