"""Box geometry of the motion tracker (:mod:`.motion`): overlap and IoU of every pair of boxes, the gap
between their edges, and the merge that turns the pieces an object breaks into back into one box. Boxes are
``(x0, y0, x1, y1)`` rows of an ``n x 4`` array, in the scaled-down frame's pixels."""

from __future__ import annotations

import numpy as np


def box_overlap(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """IoU of every box in ``a`` (n x 4) with every box in ``b`` (m x 4), and the share of each ``a`` box
    that lies inside each ``b`` box."""
    x0 = np.maximum(a[:, None, 0], b[None, :, 0])
    y0 = np.maximum(a[:, None, 1], b[None, :, 1])
    x1 = np.minimum(a[:, None, 2], b[None, :, 2])
    y1 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    iou = inter / np.maximum(area_a[:, None] + area_b[None, :] - inter, 1e-9)
    return iou, inter / np.maximum(area_a[:, None], 1e-9)


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box in ``a`` with every box in ``b``."""
    return box_overlap(a, b)[0]


def box_area(box: np.ndarray) -> float:
    """The area of one box (0 for an empty one)."""
    return float(max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1]))


def box_gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distance between the edges of every box in ``a`` and every box in ``b`` (0 when they touch)."""
    dx = np.maximum(0, np.maximum(a[:, None, 0] - b[None, :, 2], b[None, :, 0] - a[:, None, 2]))
    dy = np.maximum(0, np.maximum(a[:, None, 1] - b[None, :, 3], b[None, :, 1] - a[:, None, 3]))
    return np.maximum(dx, dy)


def merge_boxes(
    boxes: np.ndarray, motion: np.ndarray, margin: float, pixels: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boxes that overlap or lie within ``margin`` pixels of each other as one box (their union), with
    the area-weighted motion share and the summed ``pixels``: the pieces an object breaks into become one
    detection."""
    boxes = boxes.copy()
    motion = motion.astype(np.float64).copy()
    area = ((boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])).astype(np.float64)
    pixels = area.copy() if pixels is None else pixels.astype(np.float64).copy()
    merged = True
    while merged and len(boxes) > 1:
        merged = False
        near = box_gap(boxes, boxes) <= margin
        np.fill_diagonal(near, False)
        for i, j in zip(*np.nonzero(near)):
            i, j = int(min(i, j)), int(max(i, j))
            union = np.array(
                [
                    min(boxes[i, 0], boxes[j, 0]),
                    min(boxes[i, 1], boxes[j, 1]),
                    max(boxes[i, 2], boxes[j, 2]),
                    max(boxes[i, 3], boxes[j, 3]),
                ]
            )
            box_i, box_j = boxes[i], boxes[j]
            # pieces of one object: their union is not much more than the pieces (two objects side by
            # side on a diagonal leave a large empty corner, and stay two)
            if box_area(union) > 1.6 * (box_area(box_i) + box_area(box_j)) and min(
                box_area(box_i), box_area(box_j)
            ) > 0.1 * max(box_area(box_i), box_area(box_j)):
                continue
            boxes[i] = union
            motion[i] = (motion[i] * area[i] + motion[j] * area[j]) / max(area[i] + area[j], 1e-9)
            area[i] = area[i] + area[j]
            pixels[i] = pixels[i] + pixels[j]
            boxes, motion, area, pixels = (
                np.delete(boxes, j, 0),
                np.delete(motion, j),
                np.delete(area, j),
                np.delete(pixels, j),
            )
            merged = True
            break
    return boxes, motion, pixels
