"""PyTorch twins of train/models (tandem train --arch ...): the same layers
under the same state_dict keys, so tandem's weights load strictly. ResNet-18
is torchvision's own (its first conv re-made for the input channels); the
ConvNeXt block is the paper's (Linear layers on channels last).

Imported by the parity and export tests and bench/train_fashion_torch.py.
"""
from collections import OrderedDict

import torch
from torch import nn


def cnn(channels=1, height=28, width=28, classes=10, dropout=0.5):
    features = nn.Sequential(
        nn.Conv2d(channels, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2))
    classifier = nn.Sequential(
        nn.Flatten(), nn.Linear(64 * (height // 4) * (width // 4), 128), nn.ReLU(), nn.Dropout(dropout),
        nn.Linear(128, classes))
    return nn.Sequential(OrderedDict(features=features, classifier=classifier))


def lenet5(channels=1, height=28, width=28, classes=10, dropout=0.0):
    h, w = (height // 2 - 4) // 2, (width // 2 - 4) // 2
    features = nn.Sequential(
        nn.Conv2d(channels, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2))
    classifier = nn.Sequential(
        nn.Flatten(), nn.Linear(16 * h * w, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, classes))
    return nn.Sequential(OrderedDict(features=features, classifier=classifier))


def _basic_block():
    try:
        from torchvision.models.resnet import BasicBlock
        return BasicBlock
    except ImportError:
        return None


class _Block(nn.Module):
    """torchvision's BasicBlock, written out for when torchvision is absent."""

    def __init__(self, cin, cout, stride, downsample):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = downsample

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + (self.downsample(x) if self.downsample is not None else x))


def _stage(cin, cout, blocks, stride):
    block = _basic_block() or _Block
    layers = []
    for i in range(blocks):
        down = None
        if i == 0 and (stride != 1 or cin != cout):
            down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        layers.append(block(cin if i == 0 else cout, cout, stride if i == 0 else 1, down))
    return nn.Sequential(*layers)


def resnet20(channels=1, height=28, width=28, classes=10, dropout=0.0):
    return nn.Sequential(OrderedDict(
        conv1=nn.Conv2d(channels, 16, 3, padding=1, bias=False), bn1=nn.BatchNorm2d(16), relu=nn.ReLU(),
        layer1=_stage(16, 16, 3, 1), layer2=_stage(16, 32, 3, 2), layer3=_stage(32, 64, 3, 2),
        avgpool=nn.AdaptiveAvgPool2d(1), flatten=nn.Flatten(), fc=nn.Linear(64, classes)))


def resnet18(channels=3, height=224, width=224, classes=1000, dropout=0.0):
    try:
        import torchvision
    except ImportError:
        return nn.Sequential(OrderedDict(
            conv1=nn.Conv2d(channels, 64, 7, 2, 3, bias=False), bn1=nn.BatchNorm2d(64), relu=nn.ReLU(),
            maxpool=nn.MaxPool2d(3, 2, 1), layer1=_stage(64, 64, 2, 1), layer2=_stage(64, 128, 2, 2),
            layer3=_stage(128, 256, 2, 2), layer4=_stage(256, 512, 2, 2),
            avgpool=nn.AdaptiveAvgPool2d(1), flatten=nn.Flatten(), fc=nn.Linear(512, classes)))
    net = torchvision.models.resnet18(num_classes=classes)
    net.conv1 = nn.Conv2d(channels, 64, 7, 2, 3, bias=False)
    return net


class LayerScale(nn.Module):
    def __init__(self, dim, init=1e-6):
        super().__init__()
        self.gamma = nn.Parameter(torch.full((dim,), init))


class ConvNeXtBlock(nn.Module):
    """Liu et al. 2022's block as their reference code writes it (Linear
    layers on the channels-last permutation), drop path left out."""

    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.layer_scale = LayerScale(dim)

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.layer_scale.gamma * self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of [N, C, H, W]."""

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def convnext(channels=1, height=28, width=28, classes=10, dropout=0.0):
    return nn.Sequential(OrderedDict(
        stem=nn.Sequential(nn.Conv2d(channels, 32, 2, 2), LayerNorm2d(32, eps=1e-6)),
        stage1=nn.Sequential(ConvNeXtBlock(32)),
        downsample1=nn.Sequential(LayerNorm2d(32, eps=1e-6), nn.Conv2d(32, 64, 2, 2)),
        stage2=nn.Sequential(ConvNeXtBlock(64)),
        avgpool=nn.AdaptiveAvgPool2d(1), flatten=nn.Flatten(), norm=nn.LayerNorm(64, eps=1e-6),
        head=nn.Linear(64, classes)))


MODELS = {"cnn": cnn, "lenet5": lenet5, "resnet20": resnet20, "resnet18": resnet18, "convnext": convnext}


def load_named(net, tensors):
    """Loads {state_dict key: numpy array}; every parameter and running
    statistic must be there (num_batches_tracked may be missing: an ONNX
    file has no use for it)."""
    # A tensor may come in another shape of the same size: an ONNX file holds
    # a pointwise Linear's weight as a 1x1 Conv's, a layer scale as [C, 1, 1].
    own = net.state_dict()
    state = {k: torch.from_numpy(v.copy()) for k, v in tensors.items()}
    state = {k: t.reshape(own[k].shape) if k in own and t.numel() == own[k].numel() else t
             for k, t in state.items()}
    result = net.load_state_dict(state, strict=False)
    missing = [k for k in result.missing_keys if not k.endswith("num_batches_tracked")]
    if missing or result.unexpected_keys:
        raise KeyError("state_dict mismatch: missing %s, unexpected %s" % (missing, result.unexpected_keys))
    return net
