"""The pure core: records, the valid-time algebra and the write rules. No I/O, no clock."""
