"""Freezing by attribute, a head moved with .to(), an optimizer over the trainable parameters."""

import torch
from torch import nn


def replace_head(model, num_classes):
    for parameter in model.backbone.parameters():
        parameter.requires_grad = False
    reference = model.head.weight
    model.head = nn.Linear(model.head.in_features, num_classes).to(reference)
    return model


def head_optimizer(model, learning_rate):
    return torch.optim.SGD(list(model.head.parameters()), learning_rate, momentum=0.9)


def train_head(model, x, labels, learning_rate=1e-2, steps=100):
    optimizer = head_optimizer(model, learning_rate)
    model.train()
    model.backbone.eval()
    criterion = nn.CrossEntropyLoss()
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = criterion(model(x), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
