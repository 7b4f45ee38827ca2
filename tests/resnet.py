"""A small ResNet-style network laid out like torchvision's, for tests that run everywhere.

torchvision's ``resnet18`` holds 11 million parameters; ``TinyResNet`` keeps its structure at a
few thousand: a stem ``conv1``/``bn1``/``relu``, ``BasicBlock`` stages ``layer1`` and ``layer2``
(nested names such as ``layer1.0.conv1`` and ``layer2.0.downsample.0``), global average pooling
and a ``fc`` head after dropout, on channels-first colour images ``(3, 32, 32)``. Its own
``forward`` (not an ``nn.Sequential``) hides the order of its layers from a static reading, as
torchvision's models do.
"""

import torch
from torch import nn


class BasicBlock(nn.Module):
    """torchvision's ``BasicBlock``: two 3x3 convolutions with batch norm and a shortcut."""

    def __init__(self, in_channels, channels, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.downsample = None
        if stride != 1 or in_channels != channels:
            self.downsample = nn.Sequential(nn.Conv2d(in_channels, channels, 1, stride,
                                                      bias=False), nn.BatchNorm2d(channels))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class TinyResNet(nn.Module):
    """A ResNet of two ``BasicBlock`` stages (8 and 16 channels) for 3x32x32 images.

    Built from ``seed`` without touching torch's global generator; ``warm_up`` runs
    training-mode batches so that the batch norms hold running statistics, as a trained
    network's do.
    """

    def __init__(self, num_classes=10, seed=0, width=8):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU()
        self.layer1 = nn.Sequential(BasicBlock(width, width))
        self.layer2 = nn.Sequential(BasicBlock(width, 2 * width, stride=2))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(2 * width, num_classes)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in self.parameters():
                if p.ndim > 1:
                    p.copy_(torch.randn(p.shape, generator=generator)
                            * (2.0 / p[0].numel()) ** 0.5)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        return self.fc(self.dropout(torch.flatten(self.avgpool(x), 1)))

    def warm_up(self, X):
        """Batch-norm running statistics from the images ``X``; leaves the net in eval mode."""
        self.train()
        with torch.no_grad():
            for _ in range(3):
                self(torch.as_tensor(X, dtype=torch.float32))
        return self.eval()


def tiny_resnet(num_classes=10, seed=0, n_images=32):
    """A :class:`TinyResNet` with batch-norm statistics of uniform random images, in eval mode."""
    X = torch.rand(n_images, 3, 32, 32, generator=torch.Generator().manual_seed(seed))
    return TinyResNet(num_classes, seed).warm_up(X)


def images(n, seed=0):
    """``n`` float32 colour images ``(n, 3, 32, 32)`` in [0, 1]."""
    return torch.rand(n, 3, 32, 32, generator=torch.Generator().manual_seed(seed)).numpy()
