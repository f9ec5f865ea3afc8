package actionflow

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/zstd"

	"github.com/openprogram/lifecycle/shared/store"
)

// An action's item (ACTION#<id>/META) is written up to six times on the
// allow path, four of them as transaction parts, and it sits in both
// indexes: every started KB of it is billed again and again (2 write units
// per KB per transaction part, 1 per KB per index). Once decided it is
// about 1.7 KB of JSON, mostly digests and ids the decision repeats, so its
// body is stored zstd-compressed when the JSON is longer than
// compressActionAbove: about 0.7 KB, under 1 KB with its keys.
//
// A compressed body is a zstd frame (it starts with the zstd magic number,
// which JSON never does); a body of plain JSON, as written before or below
// the threshold, reads back as it always did. decodeAction reads both.
//
// The frames use a raw dictionary: the skeleton of a decided, dispatched
// action (its keys and fixed values), so even the first occurrence of each
// key costs a few bits (a typical decided action: 1.7 KB of JSON, 0.67 KB
// compressed without it, 0.42 KB with it). A frame names its dictionary's
// id, so dictionaries are append-only: never edit one in place; add the
// next id, encode with it, and keep every earlier one for decoding.
const compressActionAbove = 640

// actionDicts are the raw dictionaries by id; actionDictID encodes.
var actionDicts = map[uint32]string{
	1: `{"action_id":"act_","execution_id":"exe_","session_id":"ses_","run_id":"run_","tool_call_id":"","tool":"",` +
		`"arguments":{},"args_digest":"sha256:","request_digest":"sha256:","interactive":true,"origin":"agent",` +
		`"states":{"permission":"allow","outcome":"succeeded","delivery":"projected","started":true},` +
		`"decision":{"permission":"allow","reason":{"source":"allow_rule","code":"allow_rule","rule":"","detail":"allowed by "},` +
		`"policy_version":"","args_digest":"sha256:","action_id":"act_","execution_id":"exe_","tool_call_id":"","executor":"",` +
		`"mode":"initial","decided_at":"20","engine":{"action_id":"act_","session_id":"ses_","tool":"","permission":"allow",` +
		`"reason":{"source":"allow_rule","code":"allow_rule","rule":"","detail":"allowed by "},"policy_version":"",` +
		`"policy_digest":"sha256:","context_digest":"sha256:","args_digest":"sha256:"}},` +
		`"start":{"attempt_id":"att_","fence":1,"started_at":"20","executor":""},"result":{"outcome":"succeeded","output":""},` +
		`"created_at":"20","updated_at":"20"}`,
}

const actionDictID = 1

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

var (
	actionEncoder = mustZstdEncoder()
	actionDecoder = mustZstdDecoder()
)

func mustZstdEncoder() *zstd.Encoder {
	// The frames are small: a small window and the lower-memory encoder
	// keep the pooled encoders at a few hundred KB. The fastest level:
	// with the dictionary it is within 30 bytes of the default level on a
	// decided action, at a quarter of its CPU (a frame's setup dominates
	// for inputs this small).
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<17),
		zstd.WithLowerEncoderMem(true), zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true),
		zstd.WithEncoderDictRaw(actionDictID, []byte(actionDicts[actionDictID])))
	if err != nil {
		panic(fmt.Sprintf("zstd encoder: %v", err))
	}
	return e
}

func mustZstdDecoder() *zstd.Decoder {
	// An item is at most 400 KB: refuse a frame that claims more.
	opts := []zstd.DOption{zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(4 << 20)}
	for id, dict := range actionDicts {
		opts = append(opts, zstd.WithDecoderDictRaw(id, []byte(dict)))
	}
	d, err := zstd.NewReader(nil, opts...)
	if err != nil {
		panic(fmt.Sprintf("zstd decoder: %v", err))
	}
	return d
}

// actionBody is the stored body of a.
func actionBody(a Action) []byte {
	js := encode(a)
	if len(js) <= compressActionAbove {
		return js
	}
	z := actionEncoder.EncodeAll(js, make([]byte, 0, len(js)/2))
	if len(z) >= len(js) {
		return js
	}
	return z
}

// ActionJSON returns an action item's body as JSON, decompressing a
// compressed one (for tests and tools that read the table directly).
func ActionJSON(body []byte) ([]byte, error) {
	if !bytes.HasPrefix(body, zstdMagic) {
		return body, nil
	}
	js, err := actionDecoder.DecodeAll(body, nil)
	if err != nil {
		return nil, fmt.Errorf("decompress action body: %w", err)
	}
	return js, nil
}

func decodeAction(it store.Item) (Action, error) {
	js, err := ActionJSON(it.Body)
	if err != nil {
		return Action{}, fmt.Errorf("decode action %s: %w", it.Key(), err)
	}
	it.Body = js
	a, err := decode[Action](it, "action")
	a.Version, a.Fence = it.Version, it.Fence
	return a, err
}
