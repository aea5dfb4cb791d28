'use strict'
// lib-net's published layout: shardus-core imports build/src/types.
module.exports = require('../../lib/types.js')
