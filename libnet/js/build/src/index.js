'use strict'
// lib-net's published layout: main is build/src/index.js.
module.exports = require('../../lib/index.js')
