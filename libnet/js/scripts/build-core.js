'use strict'
// Builds the native core, shardus-net.node (the file lib-net's wrappers
// load), with the machine's Go and gcc: `go build -buildmode=c-shared` of
// libnet/napi, offline from the Go modules vendored in native/ (a packed
// package), or from the courier checkout this folder lives in. With
// COURIER_LIBNET_PREBUILT=/path/to/shardus-net.node it copies that file
// instead (an image built without Go: build the core once elsewhere).
const { spawnSync } = require('child_process')
const fs = require('fs')
const path = require('path')

const pkg = path.join(__dirname, '..')
const out = path.join(pkg, 'shardus-net.node')

function fail(msg) {
  console.error(`lib-net (courier): ${msg}`)
  process.exit(1)
}

// headersDir finds node_api.h: the running Node.js's own headers, the
// system's nodejs package, then the node-api-headers package.
function headersDir() {
  const candidates = [
    process.env.NODE_API_HEADERS_DIR,
    path.join(path.dirname(process.execPath), '..', 'include', 'node'),
    '/usr/include/node',
    '/usr/local/include/node',
  ]
  try {
    candidates.push(path.join(path.dirname(require.resolve('node-api-headers/package.json')), 'include'))
  } catch (_) {
    // not installed
  }
  const dir = candidates.find((d) => d && fs.existsSync(path.join(d, 'node_api.h')))
  if (!dir) fail(`no node_api.h found (looked in ${candidates.filter(Boolean).join(', ')}); set NODE_API_HEADERS_DIR`)
  return dir
}

// source picks the courier checkout this folder is part of (libnet/js),
// else native/, the copy a packed package carries.
function source() {
  const repo = path.join(pkg, '..', '..')
  if (fs.existsSync(path.join(repo, 'go.mod')) && fs.existsSync(path.join(repo, 'libnet', 'napi'))) return { dir: repo, flags: '', offline: false }
  const native = path.join(pkg, 'native')
  if (fs.existsSync(path.join(native, 'go.mod'))) return { dir: native, flags: '-mod=vendor', offline: true }
  fail('no Go sources: neither native/ (a packed package) nor a courier checkout around this folder')
}

function main() {
  const prebuilt = process.env.COURIER_LIBNET_PREBUILT
  if (prebuilt) {
    fs.copyFileSync(prebuilt, out)
    console.log(`lib-net (courier): copied the native core from ${prebuilt}`)
    return
  }
  const go = process.env.GO || 'go'
  const version = spawnSync(go, ['version'], { encoding: 'utf8' })
  if (version.error || version.status !== 0) {
    fail(`Go is needed to build the native core and "${go} version" failed (${version.error ? version.error.message : version.stderr}); install Go (https://go.dev/dl) and gcc, or set COURIER_LIBNET_PREBUILT`)
  }
  const src = source()
  const env = {
    ...process.env,
    CGO_ENABLED: '1',
    CGO_CFLAGS: `-I${headersDir()} ${process.env.CGO_CFLAGS || '-O2 -g'}`,
    GOFLAGS: `${src.flags} ${process.env.GOFLAGS || ''}`.trim(),
    GOTOOLCHAIN: 'local',
    GOWORK: 'off',
  }
  if (src.offline) env.GOPROXY = 'off'
  const tmp = `${out}.${process.pid}.tmp`
  const args = ['build', '-tags', 'napi', '-buildmode=c-shared', '-trimpath', '-o', tmp, './libnet/napi']
  const started = Date.now()
  const r = spawnSync(go, args, { cwd: src.dir, env, stdio: 'inherit' })
  fs.rmSync(tmp.replace(/\.tmp$/, '.h'), { force: true })
  fs.rmSync(`${out}.${process.pid}.h`, { force: true })
  if (r.status !== 0) {
    fs.rmSync(tmp, { force: true })
    fail(`"${go} ${args.join(' ')}" in ${src.dir} failed (${version.stdout.trim()}; the core needs cgo, gcc and the Go version of native/go.mod)`)
  }
  fs.renameSync(tmp, out)
  console.log(`lib-net (courier): built ${out} with ${version.stdout.trim()} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}

main()
