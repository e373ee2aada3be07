#!/usr/bin/env node
// The compiled CLI (npm install builds it: the root's prepare, or this package's prepack for a tarball).
import '../dist/main.js';
