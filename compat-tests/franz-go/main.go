// franz-go against a real Queen node: produce, a consumer group that
// commits and resumes, and admin through kadm. Exits non-zero on the first
// failed check. BOOTSTRAP names the node.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func check(ok bool, what string, args ...any) {
	if !ok {
		fmt.Fprintf(os.Stderr, "check failed: "+what+"\n", args...)
		os.Exit(1)
	}
}

func must(err error, what string) {
	check(err == nil, "%s: %v", what, err)
}

func name(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// consume reads `want` records as a member of `group`, committing each.
func consume(ctx context.Context, bootstrap, topic, group string, want int) []*kgo.Record {
	c, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	)
	must(err, "consumer client")
	defer c.Close()
	var got []*kgo.Record
	deadline, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for len(got) < want {
		fetches := c.PollRecords(deadline, want-len(got))
		if deadline.Err() != nil {
			break
		}
		fetches.EachError(func(t string, p int32, err error) { must(err, fmt.Sprintf("fetch %s[%d]", t, p)) })
		got = append(got, fetches.Records()...)
	}
	must(c.CommitRecords(ctx, got...), "commit")
	return got
}

// decompressionLimit produces one zstd batch of compressible records to
// `partition` and reads it back twice. A consumer whose MaxDecompressBatchBytes
// is below the batch's decompressed size must meet ErrDecompressTooLarge at
// the batch's first offset: it can only do so if the broker hands back the
// batch compressed as the producer sent it. A consumer with the default limit
// reads every record.
func decompressionLimit(ctx context.Context, cl *kgo.Client, bootstrap, topic string, partition int32) {
	const n, size = 200, 1 << 10
	var batch []*kgo.Record
	for i := 0; i < n; i++ {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		batch = append(batch, &kgo.Record{Topic: topic, Partition: partition, Value: v})
	}
	must(cl.ProduceSync(ctx, batch...).FirstErr(), "produce the compressed batch")
	first := batch[0].Offset

	read := func(limit int) (int, error) {
		opts := []kgo.Opt{
			kgo.SeedBrokers(bootstrap),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(first)}}),
		}
		if limit > 0 {
			opts = append(opts, kgo.MaxDecompressBatchBytes(limit))
		}
		c, err := kgo.NewClient(opts...)
		must(err, "decompression-limit consumer")
		defer c.Close()
		deadline, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		got := 0
		for got < n && deadline.Err() == nil {
			fetches := c.PollFetches(deadline)
			if err := fetches.Err0(); err != nil && deadline.Err() == nil {
				return got, err
			}
			got += len(fetches.Records())
		}
		return got, nil
	}

	got, err := read(64 << 10)
	var tooLarge *kgo.ErrDecompressTooLarge
	check(errors.As(err, &tooLarge), "a 64 KiB limit on a %d KiB batch: want ErrDecompressTooLarge, got %v after %d records", n*size>>10, err, got)
	check(got == 0 && tooLarge.Offset == first, "the refused batch starts at %d: got offset %d after %d records", first, tooLarge.Offset, got)
	got, err = read(0)
	must(err, "read the batch with the default limit")
	check(got == n, "the default limit reads %d of %d records", got, n)
}

func main() {
	ctx := context.Background()
	bootstrap := os.Getenv("BOOTSTRAP")
	topic := name("franz")

	// The manual partitioner honours Record.Partition; batches go as zstd.
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	must(err, "client")
	defer cl.Close()
	adm := kadm.NewClient(cl)

	created, err := adm.CreateTopics(ctx, 2, 1, nil, topic)
	must(err, "create topics")
	must(created[topic].Err, "create "+topic)
	_, err = adm.CreatePartitions(ctx, 1, topic)
	must(err, "create partitions")
	details, err := adm.ListTopics(ctx, topic)
	must(err, "list topics")
	check(len(details[topic].Partitions) == 3, "three partitions, saw %d", len(details[topic].Partitions))

	for i := 0; i < 8; i++ {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprintf("v%d", i))}
		res := cl.ProduceSync(ctx, r)
		must(res.FirstErr(), "produce")
		check(res[0].Record.Offset == int64(i), "offset %d answered %d", i, res[0].Record.Offset)
	}

	decompressionLimit(ctx, cl, bootstrap, topic, 2)

	group := name("g")
	first := consume(ctx, bootstrap, topic, group, 5)
	check(len(first) == 5, "first member read %d of 5", len(first))
	for i, r := range first {
		check(r.Offset == int64(i) && string(r.Value) == fmt.Sprintf("v%d", i), "record %d", i)
	}
	rest := consume(ctx, bootstrap, topic, group, 3)
	check(len(rest) == 3 && rest[0].Offset == 5, "second member resumes at 5")

	offsets, err := adm.FetchOffsets(ctx, group)
	must(err, "fetch offsets")
	o, ok := offsets.Lookup(topic, 0)
	check(ok && o.At == 8, "committed offset 8, saw %v", o.At)
	groups, err := adm.ListGroups(ctx)
	must(err, "list groups")
	_, listed := groups[group]
	check(listed, "group listed")

	deleted, err := adm.DeleteTopics(ctx, topic)
	must(err, "delete topics")
	must(deleted[topic].Err, "delete "+topic)
	fmt.Println("franz-go: all checks passed")
}
