import { encodeLabelledRecord } from '../labelled-record.js';

/** Image side in pixels. */
export const CIFAR10_SIDE = 32;
/** Colour channels. */
export const CIFAR10_CHANNELS = 3;
/** Number of classes. */
export const CIFAR10_CLASSES = 10;
/** Bytes of the pixels of one image. */
export const CIFAR10_PIXEL_BYTES = CIFAR10_SIDE * CIFAR10_SIDE * CIFAR10_CHANNELS;
/** Bytes of one record: the label byte, then the pixels. */
export const CIFAR10_RECORD_BYTES = 1 + CIFAR10_PIXEL_BYTES;

/**
 * The record layout of the CIFAR-10 binary release (a label byte, then the pixels), except that the
 * pixels are height x width x channel (interleaved RGB) as TensorFlow.js wants them, not planar.
 */
export function encodeCifar10Record(label: number, pixels: Uint8Array): Uint8Array {
  return encodeLabelledRecord(label, pixels, CIFAR10_CLASSES, CIFAR10_PIXEL_BYTES);
}
