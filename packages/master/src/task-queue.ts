/** A FIFO with O(1) push, push-front and shift (a head index over an array, compacted lazily). */
export class TaskQueue<T> {
  #items: T[] = [];
  #head = 0;
  #front: T[] = [];

  get length(): number {
    return this.#front.length + this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  /** Puts an item first: recovered tasks run before fresh ones so an epoch closes sooner. */
  pushFront(item: T): void {
    this.#front.push(item);
  }

  shift(): T | undefined {
    if (this.#front.length > 0) return this.#front.pop();
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head] as T;
    this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** Items in dispatch order (front first). */
  toArray(): T[] {
    return [...[...this.#front].reverse(), ...this.#items.slice(this.#head)];
  }

  clear(): void {
    this.#items = [];
    this.#front = [];
    this.#head = 0;
  }
}
